"""Multi-file transactions (TXN, RECOV): the journal, the publish, rollback and recovery."""
