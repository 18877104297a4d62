// Package caskade is a durable, ordered key-value store on the Bitcask design:
// append-only data files of CRC-checked records, an in-memory key directory,
// hint files for fast opens, and group commit. Unlike Bitcask, the key
// directory is ordered, so range reads, prefix scans and FoundationDB-style
// key selectors work, and it offers O(1) point-in-time snapshots.
//
// Open a database with Open, write with Set, Delete and atomic Batches, read
// with Get, iterators, range reads and key selectors, and take a consistent
// view with Snapshot. A DB is safe for concurrent use by many goroutines;
// concurrent writers share fsyncs (group commit) under SyncAlways.
//
// Every write, whatever its size, is one commit: its records share one commit
// version, and the last carries a commit marker, so recovery after a crash
// applies all of it or none of it. A write that returned nil under SyncAlways
// survives any crash.
package caskade
