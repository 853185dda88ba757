package e2e

import "context"

// Keyed is stored with every key a directive can give a call; it is
// scheduled an hour ahead, so the test reads the stored rows before it runs.
//
//argo:retry retries=0 mode=schedule first-delay=1h shard-by=account unique-by=ref tenant-by=tenant order-by=account
func Keyed(ctx context.Context, tenant, account, ref string) error { return nil }
