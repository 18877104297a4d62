//go:build !linux

package vfs

// SyncData makes the data written to f so far durable; outside Linux it is
// f.Sync.
func SyncData(f File) error { return f.Sync() }

func syncData(f File, hold bool) error { return f.Sync() }
