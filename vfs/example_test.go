package vfs_test

import (
	"errors"
	"fmt"

	"github.com/caskade/caskade/vfs"
)

// A crash test runs a workload once to count its mutating operations, then
// reruns it crashing after every possible number of operations and checks
// what survives.
func ExampleMemFS_SetCrashAfter() {
	workload := func(fsys vfs.FS) error {
		if err := fsys.MkdirAll("/db", 0o755); err != nil {
			return err
		}
		f, err := fsys.Create("/db/000001.data")
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write([]byte("record")); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		return fsys.SyncDir("/db")
	}

	m := vfs.NewMem()
	if err := workload(m); err != nil {
		panic(err)
	}
	n := m.MutatingOps()

	for k := 0; k <= n; k++ {
		m := vfs.NewMem()
		m.SetCrashAfter(k)
		err := workload(m)
		survivor := m.Crash(vfs.CrashOptions{})
		names, _ := survivor.List("/db")
		fmt.Println(k, errors.Is(err, vfs.ErrCrashed), names)
	}
	// Output:
	// 0 true []
	// 1 true []
	// 2 true []
	// 3 true []
	// 4 true []
	// 5 false [000001.data]
}
