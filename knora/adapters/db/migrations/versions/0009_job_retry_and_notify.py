"""Jobs: a retry time (``run_after``: a failed job waits before its next attempt, growing each time), and on
PostgreSQL a notification on channel ``knora_jobs`` whenever a job becomes claimable, so every replica's queue
(``KNORA_JOB_QUEUE=postgres``) claims it at once instead of at its next poll. The trigger fires for the job
rows other tables' transactions add too (a document and its job are committed together).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("run_after", sa.DateTime(timezone=True), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("""CREATE OR REPLACE FUNCTION knora_jobs_notify() RETURNS trigger AS $$
            BEGIN PERFORM pg_notify('knora_jobs', NEW.kind); RETURN NULL; END; $$ LANGUAGE plpgsql""")
        op.execute("""CREATE TRIGGER knora_jobs_notify AFTER INSERT OR UPDATE OF status ON jobs
            FOR EACH ROW WHEN (NEW.status = 'queued') EXECUTE FUNCTION knora_jobs_notify()""")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS knora_jobs_notify ON jobs")
        op.execute("DROP FUNCTION IF EXISTS knora_jobs_notify()")
    op.drop_column("jobs", "run_after")
