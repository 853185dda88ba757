package runtime

import (
	"fmt"
	"strconv"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/failover"
)

// multiWriterParam is the DSN parameter that lets each process write
// through the first usable Galera node of its own server list
// (failover.Options.MultiWriter; docs/deployment.md says what can break).
// Without it every process writes through one node, elected from what the
// nodes report.
const multiWriterParam = "argoMultiWriter"

// failoverOptions takes argo's own parameters out of mc.Params (the driver
// would send them to the server as session variables) and returns the
// failover connector's options they set.
func failoverOptions(mc *mysql.Config) (failover.Options, error) {
	var opts failover.Options
	v, ok := mc.Params[multiWriterParam]
	if !ok {
		return opts, nil
	}
	delete(mc.Params, multiWriterParam)
	on, err := strconv.ParseBool(v)
	if err != nil {
		return opts, fmt.Errorf("%s=%q is not true or false: leave it out (one writer, the default) or write %s=true to let each process write through the first node of its own list (docs/deployment.md)", multiWriterParam, v, multiWriterParam)
	}
	opts.MultiWriter = on
	return opts, nil
}
