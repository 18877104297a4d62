//go:build unix

package memcache

import (
	"fmt"
	"syscall"
)

// rusage returns the process's user and system CPU time as memcached
// prints them (seconds.microseconds).
func rusage() (user, sys string) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return "0.000000", "0.000000"
	}
	f := func(tv syscall.Timeval) string {
		return fmt.Sprintf("%d.%06d", int64(tv.Sec), int64(tv.Usec))
	}
	return f(ru.Utime), f(ru.Stime)
}
