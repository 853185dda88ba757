-- argo schema, version 22, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000019 (and 000020, 000021 where present).
--
-- Who made each operator change, by the database's own account
-- (docs/operations.md, "Two people for a discard"): the operator name in the
-- trail is what the operator's tool says (argoctl's -operator, the console's
-- login); beside it argo now records CURRENT_USER(), the account the server
-- authenticated. A discard request keeps the account that asked, and argoctl
-- refuses an approval from that same account. Added at the end with constant
-- defaults (instant: no table copy); rows written before this migration
-- keep ''.

ALTER TABLE argo_operator_action
  ADD COLUMN db_account VARCHAR(288) NOT NULL DEFAULT '' COMMENT 'the database account that made the change (CURRENT_USER()); empty before migration 000022';

ALTER TABLE argo_discard_request
  ADD COLUMN requested_account VARCHAR(288) NOT NULL DEFAULT '' COMMENT 'the database account that asked (CURRENT_USER()); empty before migration 000022';
