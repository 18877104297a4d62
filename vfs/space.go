package vfs

// FreeSpacer is implemented by a file system that can tell how much room
// is left on it. The operating system's file system does where statfs(2)
// exists.
type FreeSpacer interface {
	// FreeSpace returns the bytes an unprivileged writer may still
	// write to the file system that holds dir.
	FreeSpace(dir string) (int64, error)
}

// FreeSpace returns the bytes left on the file system of fs that holds
// dir, and false if fs cannot tell (it is no FreeSpacer, or asking it
// failed). It is a hint: other writers may use the room up at any time.
func FreeSpace(fs FS, dir string) (int64, bool) {
	s, ok := fs.(FreeSpacer)
	if !ok {
		return 0, false
	}
	n, err := s.FreeSpace(dir)
	return n, err == nil
}
