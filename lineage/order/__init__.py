"""The training reader's orders, pure arithmetic (numpy, no catalog, no I/O): :mod:`~lineage.order.reader`,
the epoch order of a release's samples and each rank's and DataLoader worker's share of it;
:mod:`~lineage.order.export`, the same over a training export's sequences, and which of them a
reader-fed training step saw. Below the service, which answers step queries from them; the reader
(above it) iterates them. This file imports nothing, so ``import lineage.reader`` stays light."""
