-- Verdict-record restores that follow the committed offsets (streams/runtime/redelivery.py): each checkpoint of
-- the verdict-records changelog also records the end of the drafts partition it belongs to, taken just after the
-- changelog's end. A draft at or past that offset was judged after the checkpoint, so its verdict record lies at
-- or past end_offset; a restore starts at the newest checkpoint whose source_end is at most the group's committed
-- offset. NULL: not recorded (the other tables, and rows of workers before this migration).
ALTER TABLE changelog_checkpoints ADD COLUMN IF NOT EXISTS source_end bigint;
