-- argo schema, version 13, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000012.
--
-- Slot grants of a flow group's concurrency cap (docs/flow-control.md, "Slot
-- grants"): while a group is far below its cap, an instance may be granted
-- as many of its slots as it has workers, for a few seconds, and claims the
-- group's tasks without the group's row lock until then. The grants are
-- written with the rest of the row, under its lock, one per line as
-- "<until, Unix ms> <slots> <instance id>"; every locked claim counts the
-- other instances' live grants as running. Added at the end, nullable (NULL
-- and '': no grant): no table copy.

ALTER TABLE argo_flow
  ADD COLUMN grants MEDIUMTEXT NULL COMMENT 'concurrency cap: slots granted to instances, one per line "<until ms> <slots> <instance>"';
