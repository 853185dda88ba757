//go:build !unix

package testdb

import (
	"fmt"
	"time"
)

// fileLock needs flock, which this system lacks: tests that kill Galera
// nodes run on Unix only.
type fileLock struct{}

func lockFile(path string, exclusive bool, timeout time.Duration) (*fileLock, error) {
	return nil, fmt.Errorf("locking %s needs flock: run the Galera tests on Linux", path)
}

func (l *fileLock) unlock() {}
