package caskade

import (
	"maps"
	"sync/atomic"

	"github.com/caskade/caskade/internal/segment"
)

// fileSet is an immutable set of open data files. The database holds the
// current set; every snapshot and iterator holds the set that was current
// when it was taken, so a file that merge retires stays open (and on disk)
// until the last view that may read it is closed. A set holds a reference
// on each of its files; reads take their own reference for the duration of
// a read.
type fileSet struct {
	files map[uint32]*segment.File
	refs  atomic.Int64
}

// newFileSet makes a set of files, taking a reference on each.
func newFileSet(files map[uint32]*segment.File) *fileSet {
	s := &fileSet{files: files}
	for _, f := range files {
		f.Acquire()
	}
	s.refs.Store(1)
	return s
}

// with returns a new set with f added (or, if f is nil, id removed).
func (s *fileSet) with(id uint32, f *segment.File) *fileSet {
	m := maps.Clone(s.files)
	if f == nil {
		delete(m, id)
	} else {
		m[id] = f
	}
	return newFileSet(m)
}

func (s *fileSet) acquire() { s.refs.Add(1) }

// release drops a reference; the last one releases the files.
func (s *fileSet) release() {
	if s.refs.Add(-1) == 0 {
		for _, f := range s.files {
			f.Release()
		}
	}
}

// acquireFile returns file id with a read reference taken, or nil.
func (s *fileSet) acquireFile(id uint32) *segment.File {
	if f := s.files[id]; f != nil && f.Acquire() {
		return f
	}
	return nil
}
