"""Worker plumbing that knows no service: the Faust / aiokafka seams and the I/O a worker's services run on.

The transport and its fast lanes, undecodable batches, the output producer, direct table writes, the history
view of committed messages and per-key dispatch. May import: :mod:`engine`, :mod:`streams.wire`,
:mod:`streams.store`, Faust and aiokafka; never :mod:`streams.services`, :mod:`streams.worker`,
:mod:`streams.client` or the CLI.
"""
