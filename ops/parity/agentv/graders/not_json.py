"""A grader that prints plain text and exits 0."""

print("looks fine")
