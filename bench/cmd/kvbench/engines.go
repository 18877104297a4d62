package main

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	bitcask "git.mills.io/prologic/bitcask"
	"github.com/caskade/caskade"
	pebble "github.com/cockroachdb/pebble/v2"
	badger "github.com/dgraph-io/badger/v4"
	bolt "go.etcd.io/bbolt"
)

// syncMode is a durability setting, named after caskade's policies. Peers
// offer only "always" (fsync before acknowledging) and "none".
type syncMode int

const (
	syncAlways syncMode = iota
	syncEverySec
	syncNone
)

func (m syncMode) String() string {
	switch m {
	case syncAlways:
		return "always"
	case syncEverySec:
		return "everysec"
	default:
		return "none"
	}
}

// openCfg says how to open a store.
type openCfg struct {
	sync syncMode
	// writers is how many goroutines will call set (bbolt switches from
	// one Update per write to db.Batch above 1).
	writers int
	// recoveryWorkers sets caskade's Options.RecoveryWorkers (0: default).
	recoveryWorkers int
}

// store is one open database as the workloads see it. set, get and scan are
// safe for concurrent use.
type store interface {
	set(k, v []byte) error
	// get returns the length of the value of k.
	get(k []byte) (int, error)
	// scan visits up to n pairs in ascending key order from the first key
	// >= start, reading each value, and returns how many it visited.
	scan(start []byte, n int, visit func(k, v []byte)) (int, error)
	// load writes keys 0..n-1 (keyAt, valueAt) as fast as the engine's
	// bulk path allows, without fsync per write.
	load(n uint64) error
	close() error
}

// settler is a store with background work (LSM flushes and compactions)
// that makes reads right after a bulk load unrepresentative. busy reports
// whether such work is running or due now.
type settler interface {
	busy() bool
}

// engine describes one database implementation.
type engine struct {
	name  string
	modes []syncMode // the durability settings it has
	// config describes the engine's settings for a mode, for the tables.
	config func(m syncMode, writers int) string
	open   func(dir string, c openCfg) (store, error)
	// dropIndex removes the files that let the engine open without reading
	// its data (caskade's hint files, bitcask's index); nil if it has none.
	dropIndex func(dir string) error
	// inMemoryIndex is set for engines whose whole key directory lives on
	// the Go heap (the mem workload measures those).
	inMemoryIndex bool
}

var engines = map[string]*engine{
	"caskade": caskadeEngine,
	"pebble":  pebbleEngine,
	"bbolt":   bboltEngine,
	"badger":  badgerEngine,
	"bitcask": bitcaskEngine,
}

// peerOrder is the order peers are run and listed in.
var peerOrder = []string{"pebble", "bbolt", "badger", "bitcask"}

// loadBatch is how many writes one bulk-load commit carries.
const loadBatch = 1000

// ---------------------------------------------------------------- caskade

// caskadeMaxFileSize is Options.MaxFileSize for every caskade DB (0: the
// default, 256 MiB). Set by -caskade-max-file-size.
var caskadeMaxFileSize int64

var caskadeEngine = &engine{
	name:  "caskade",
	modes: []syncMode{syncAlways, syncEverySec, syncNone},
	config: func(m syncMode, _ int) string {
		return map[syncMode]string{syncAlways: "SyncAlways", syncEverySec: "SyncEverySec", syncNone: "SyncNone"}[m]
	},
	open: func(dir string, c openCfg) (store, error) {
		pol := map[syncMode]caskade.SyncPolicy{syncAlways: caskade.SyncAlways, syncEverySec: caskade.SyncEverySec, syncNone: caskade.SyncNone}[c.sync]
		db, err := caskade.Open(dir, &caskade.Options{
			Sync:            pol,
			RecoveryWorkers: c.recoveryWorkers,
			MaxFileSize:     caskadeMaxFileSize,
		})
		if err != nil {
			return nil, err
		}
		return &caskadeStore{db}, nil
	},
	dropIndex: func(dir string) error {
		hints, err := filepath.Glob(filepath.Join(dir, "*.hint"))
		if err != nil {
			return err
		}
		if len(hints) == 0 {
			return fmt.Errorf("no *.hint files in %s", dir)
		}
		for _, h := range hints {
			if err := os.Remove(h); err != nil {
				return err
			}
		}
		return nil
	},
	inMemoryIndex: true,
}

type caskadeStore struct{ db *caskade.DB }

// busy reports hint files being written for freshly sealed data files, or
// a merge: background work that holds memory and CPU.
func (s *caskadeStore) busy() bool {
	st := s.db.Stats()
	return st.HintsPending > 0 || st.Merge.Running
}

func (s *caskadeStore) set(k, v []byte) error { return s.db.Set(k, v) }

func (s *caskadeStore) get(k []byte) (int, error) {
	v, err := s.db.Get(k)
	return len(v), err
}

func (s *caskadeStore) scan(start []byte, n int, visit func(k, v []byte)) (int, error) {
	it, err := s.db.NewIterator(nil)
	if err != nil {
		return 0, err
	}
	c := 0
	for ok := it.Seek(start); ok && c < n; ok = it.Next() {
		v := it.Value()
		if v == nil {
			break
		}
		visit(it.Key(), v)
		c++
	}
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return c, err
}

func (s *caskadeStore) load(n uint64) error {
	var b caskade.Batch
	k, v := make([]byte, keySize), make([]byte, valueSize)
	for i := range n {
		keyAt(k, i)
		valueAt(v, i)
		b.Set(k, v)
		if b.Len() == loadBatch || i == n-1 {
			if err := s.db.Write(&b); err != nil {
				return err
			}
			b.Reset()
		}
	}
	return nil
}

func (s *caskadeStore) close() error { return s.db.Close() }

// ---------------------------------------------------------------- pebble

// pebbleCacheSize is the block cache given to pebble (its default is 8 MiB,
// which would send most reads of the 1M-key set to the OS page cache through
// a decompression; 256 MiB matches badger's default block cache).
const pebbleCacheSize = 256 << 20

var pebbleEngine = &engine{
	name:  "pebble",
	modes: []syncMode{syncAlways, syncNone},
	config: func(m syncMode, _ int) string {
		if m == syncAlways {
			return "Set(pebble.Sync)"
		}
		return "Set(pebble.NoSync)"
	},
	open: func(dir string, c openCfg) (store, error) {
		db, err := pebble.Open(dir, &pebble.Options{CacheSize: pebbleCacheSize, Logger: quietPebbleLogger{}})
		if err != nil {
			return nil, err
		}
		wo := pebble.NoSync
		if c.sync == syncAlways {
			wo = pebble.Sync
		}
		return &pebbleStore{db, wo}, nil
	},
}

type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...any) {}
func (quietPebbleLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: %s\n", fmt.Sprintf(format, args...))
}
func (quietPebbleLogger) Fatalf(format string, args ...any) {
	log.Fatalf("pebble: %s", fmt.Sprintf(format, args...))
}

type pebbleStore struct {
	db *pebble.DB
	wo *pebble.WriteOptions
}

func (s *pebbleStore) set(k, v []byte) error { return s.db.Set(k, v, s.wo) }

func (s *pebbleStore) get(k []byte) (int, error) {
	v, closer, err := s.db.Get(k)
	if err != nil {
		return 0, err
	}
	n := len(v)
	return n, closer.Close()
}

func (s *pebbleStore) scan(start []byte, n int, visit func(k, v []byte)) (int, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	c := 0
	for ok := it.SeekGE(start); ok && c < n; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return c, err
		}
		visit(it.Key(), v)
		c++
	}
	return c, it.Close()
}

func (s *pebbleStore) load(n uint64) error {
	k, v := make([]byte, keySize), make([]byte, valueSize)
	b := s.db.NewBatch()
	for i := range n {
		keyAt(k, i)
		valueAt(v, i)
		if err := b.Set(k, v, nil); err != nil {
			return err
		}
		if b.Count() == loadBatch || i == n-1 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = s.db.NewBatch()
		}
	}
	return b.Close()
}

// busy reports a flush or compaction in progress. (Compact.EstimatedDebt
// is not used: it can stay above zero on an LSM that pebble will not
// compact further.)
func (s *pebbleStore) busy() bool {
	m := s.db.Metrics()
	return m.Flush.NumInProgress > 0 || m.Compact.NumInProgress > 0
}

func (s *pebbleStore) close() error { return s.db.Close() }

// ---------------------------------------------------------------- bbolt

var bboltBucket = []byte("kv")

const bboltFile = "bolt.db"

// bboltLoadTx is how many keys one bulk-load transaction of bbolt carries.
// bbolt is loaded in key order: random-order inserts into a large B+tree
// rewrite most leaf pages in every transaction.
const bboltLoadTx = 100_000

// bboltMaxBatchDelay overrides bbolt's DB.MaxBatchDelay (default 10 ms) when
// positive. Set by -bbolt-max-batch-delay.
var bboltMaxBatchDelay time.Duration

var bboltEngine = &engine{
	name:  "bbolt",
	modes: []syncMode{syncAlways, syncNone},
	config: func(m syncMode, writers int) string {
		s := "NoSync=false"
		if m == syncNone {
			s = "NoSync=true"
		}
		if writers > 1 {
			d := "10ms, the default"
			if bboltMaxBatchDelay > 0 {
				d = bboltMaxBatchDelay.String()
			}
			return fmt.Sprintf("%s, db.Batch (MaxBatchDelay %s)", s, d)
		}
		return s + ", db.Update per write"
	},
	open: func(dir string, c openCfg) (store, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		db, err := bolt.Open(filepath.Join(dir, bboltFile), 0o600, &bolt.Options{
			Timeout: 5 * time.Second,
			NoSync:  c.sync == syncNone,
		})
		if err != nil {
			return nil, err
		}
		if err := db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(bboltBucket)
			return err
		}); err != nil {
			db.Close()
			return nil, err
		}
		if bboltMaxBatchDelay > 0 {
			db.MaxBatchDelay = bboltMaxBatchDelay
		}
		return &bboltStore{db: db, batch: c.writers > 1}, nil
	},
}

type bboltStore struct {
	db    *bolt.DB
	batch bool
}

func (s *bboltStore) set(k, v []byte) error {
	fn := func(tx *bolt.Tx) error { return tx.Bucket(bboltBucket).Put(k, v) }
	if s.batch {
		return s.db.Batch(fn)
	}
	return s.db.Update(fn)
}

func (s *bboltStore) get(k []byte) (n int, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bboltBucket).Get(k)
		if v == nil {
			return errNotFound
		}
		n = len(v)
		return nil
	})
	return n, err
}

func (s *bboltStore) scan(start []byte, n int, visit func(k, v []byte)) (c int, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bboltBucket).Cursor()
		for k, v := cur.Seek(start); k != nil && c < n; k, v = cur.Next() {
			visit(k, v)
			c++
		}
		return nil
	})
	return c, err
}

func (s *bboltStore) load(n uint64) error {
	// Generate the keys, sort them, and insert in key order.
	idx := make([]uint64, n)
	for i := range idx {
		idx[i] = uint64(i)
	}
	ka, kb := make([]byte, keySize), make([]byte, keySize)
	slices.SortFunc(idx, func(a, b uint64) int {
		keyAt(ka, a)
		keyAt(kb, b)
		return bytes.Compare(ka, kb)
	})
	for lo := 0; lo < len(idx); lo += bboltLoadTx {
		hi := min(lo+bboltLoadTx, len(idx))
		err := s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bboltBucket)
			// bbolt keeps the slices until the commit: one buffer per tx.
			buf := make([]byte, (hi-lo)*(keySize+valueSize))
			for j, i := range idx[lo:hi] {
				k := buf[j*(keySize+valueSize):][:keySize]
				v := buf[j*(keySize+valueSize)+keySize:][:valueSize]
				keyAt(k, i)
				valueAt(v, i)
				if err := b.Put(k, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return s.db.Sync()
}

func (s *bboltStore) close() error { return s.db.Close() }

// ---------------------------------------------------------------- badger

var badgerEngine = &engine{
	name:  "badger",
	modes: []syncMode{syncAlways, syncNone},
	config: func(m syncMode, _ int) string {
		if m == syncAlways {
			return "SyncWrites=true, db.Update per write"
		}
		return "SyncWrites=false, db.Update per write"
	},
	open: func(dir string, c openCfg) (store, error) {
		opts := badger.DefaultOptions(dir).WithSyncWrites(c.sync == syncAlways).WithLogger(nil)
		db, err := badger.Open(opts)
		if err != nil {
			return nil, err
		}
		return &badgerStore{db}, nil
	},
}

type badgerStore struct{ db *badger.DB }

func (s *badgerStore) set(k, v []byte) error {
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) })
}

func (s *badgerStore) get(k []byte) (n int, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { n = len(v); return nil })
	})
	return n, err
}

func (s *badgerStore) scan(start []byte, n int, visit func(k, v []byte)) (c int, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		// Values of this size are stored inline in the LSM tree (badger's
		// ValueThreshold defaults to 1 MiB), so prefetching them on
		// goroutines only costs: it makes these scans about 5x slower.
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(start); it.Valid() && c < n; it.Next() {
			item := it.Item()
			if err := item.Value(func(v []byte) error { visit(item.Key(), v); return nil }); err != nil {
				return err
			}
			c++
		}
		return nil
	})
	return c, err
}

func (s *badgerStore) load(n uint64) error {
	wb := s.db.NewWriteBatch()
	for i := range n {
		// A WriteBatch keeps the slices until it flushes them.
		k, v := make([]byte, keySize), make([]byte, valueSize)
		keyAt(k, i)
		valueAt(v, i)
		if err := wb.Set(k, v); err != nil {
			wb.Cancel()
			return err
		}
	}
	return wb.Flush()
}

// busy reports whether a level wants a compaction (badger reports a score
// only for the levels it would compact, those scoring 1 or more).
func (s *badgerStore) busy() bool {
	for _, l := range s.db.Levels() {
		if l.Adjusted >= 1 || l.Score >= 1 {
			return true
		}
	}
	return false
}

func (s *badgerStore) close() error { return s.db.Close() }

// ---------------------------------------------------------------- bitcask

const bitcaskIndexFile = "index"

// bitcaskMaxDatafileSize is -bitcask-max-datafile-size (0: as caskade).
var bitcaskMaxDatafileSize int

// bitcaskFileSize is bitcask's MaxDatafileSize: by default the same as
// caskade's MaxFileSize. bitcask's own default, 1 MiB, is unusable for a
// benchmark: it rewrites its whole index file at every rotation, so loading
// 1M keys took over 4 minutes (about 4k writes/s) instead of seconds. The
// price of large files: bitcask reads its active (newest) file with pread
// and only sealed files through mmap.
func bitcaskFileSize() int {
	if bitcaskMaxDatafileSize > 0 {
		return bitcaskMaxDatafileSize
	}
	if caskadeMaxFileSize > 0 {
		return int(caskadeMaxFileSize)
	}
	return caskade.DefaultMaxFileSize
}

var bitcaskEngine = &engine{
	name:  "bitcask",
	modes: []syncMode{syncAlways, syncNone},
	config: func(m syncMode, _ int) string {
		return fmt.Sprintf("WithSync(%v), MaxDatafileSize %s", m == syncAlways, fmtBytes(int64(bitcaskFileSize())))
	},
	open: func(dir string, c openCfg) (store, error) {
		db, err := bitcask.Open(dir, bitcask.WithSync(c.sync == syncAlways), bitcask.WithMaxDatafileSize(bitcaskFileSize()))
		if err != nil {
			return nil, err
		}
		return &bitcaskStore{db}, nil
	},
	dropIndex: func(dir string) error {
		return os.Remove(filepath.Join(dir, bitcaskIndexFile))
	},
	inMemoryIndex: true,
}

type bitcaskStore struct{ db *bitcask.Bitcask }

func (s *bitcaskStore) set(k, v []byte) error { return s.db.Put(k, v) }

func (s *bitcaskStore) get(k []byte) (int, error) {
	v, err := s.db.Get(k)
	return len(v), err
}

var errStop = errors.New("stop")

// scan uses Range, the only ordered read bitcask has: it walks the radix tree
// from the first key with the common prefix of start and end (here the whole
// "kvbench:" key space), not from start, and yields keys only, so each value
// is then read with Get.
func (s *bitcaskStore) scan(start []byte, n int, visit func(k, v []byte)) (int, error) {
	end := append([]byte(keyPrefix), bytes.Repeat([]byte{0xff}, keySize-len(keyPrefix))...)
	keys := make([][]byte, 0, n)
	err := s.db.Range(start, end, func(k []byte) error {
		keys = append(keys, k)
		if len(keys) == n {
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return 0, err
	}
	for i, k := range keys {
		v, err := s.db.Get(k)
		if err != nil {
			return i, err
		}
		visit(k, v)
	}
	return len(keys), nil
}

func (s *bitcaskStore) load(n uint64) error {
	k, v := make([]byte, keySize), make([]byte, valueSize)
	for i := range n {
		keyAt(k, i)
		valueAt(v, i)
		if err := s.db.Put(k, v); err != nil {
			return err
		}
	}
	return s.db.Sync()
}

func (s *bitcaskStore) close() error { return s.db.Close() }

var errNotFound = errors.New("not found")
