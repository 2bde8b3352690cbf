-- The signed Commands of human decisions (docs/audit.md): the Command's bytes as received,
-- beside its First-Admission Record, written in the writer's fenced transaction. NULL for an
-- Agent's or a service's Command (not kept) and for every record written before this
-- migration. A nullable column without a default: no row is rewritten.
ALTER TABLE mwp_admissions ADD COLUMN command bytea;
