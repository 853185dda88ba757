//go:build unix

package testdb

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileLock is an exclusive flock on a file, shared by every process on the
// machine (go test runs packages as separate processes).
type fileLock struct{ f *os.File }

// lockFile takes a lock on path (created if missing), exclusive or shared,
// waiting up to timeout for the holders it conflicts with to let go.
func lockFile(path string, exclusive bool, timeout time.Duration) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%s still locked by other tests after %s", path, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (l *fileLock) unlock() {
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
