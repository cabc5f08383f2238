"""Job queue implementations behind knora.ports.jobs.JobQueue."""
