package metrics

import (
	"github.com/caskade/caskade"
	"github.com/prometheus/client_golang/prometheus"
)

// dbCollector reads caskade.DB.Stats at scrape time.
type dbCollector struct {
	db *caskade.DB

	keys, expiring, live, dead, disk *prometheus.Desc
	files, snapshots, version        *prometheus.Desc
	watches                          *prometheus.Desc
	writesStopped, recovery          *prometheus.Desc
	writesRefused                    *prometheus.Desc
	mergeRunning, mergeDone, mergeOf *prometheus.Desc
	keyBytes, keyDead, keyCompacts   *prometheus.Desc
	commits, groups                  *prometheus.Desc
	expired, merges, mergeFailures   *prometheus.Desc
	lastMerge                        *prometheus.Desc
	// From the engine's totals since open, under the names (without
	// the db_ prefix) they had when the server observed them itself.
	mergeDuration, mergeIn, mergeOut, mergeRecords *prometheus.Desc
	syncDuration, syncErrors                       *prometheus.Desc
}

func newDBCollector(db *caskade.DB) *dbCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("caskade_db_"+name, help, nil, nil)
	}
	t := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("caskade_"+name, help, nil, nil)
	}
	return &dbCollector{
		db:            db,
		mergeDuration: t("merge_duration_seconds", "Duration of the merges since open (automatic, BGREWRITEAOF, caskade merge), failed ones included."),
		mergeIn:       t("merge_input_bytes_total", "Bytes of data files rewritten by the merges that finished since open."),
		mergeOut:      t("merge_output_bytes_total", "Bytes of data files written by the merges that finished since open."),
		mergeRecords:  t("merge_records_total", "Live records rewritten by the merges that finished since open."),
		syncDuration:  t("sync_duration_seconds", "Duration of the fsyncs of the active data file since open: one per group commit under sync always, the background ones of everysec, and explicit syncs."),
		syncErrors:    t("sync_errors_total", "fsyncs of the active data file that failed (the first stops writes)."),
		keys:          d("keys", "Keys in the key directory (including expired keys not yet dropped)."),
		expiring:      d("expiring_keys", "Keys with a TTL."),
		live:          d("live_bytes", "Bytes of records the key directory points to."),
		dead:          d("dead_bytes", "Bytes of overwritten, deleted or expired records (reclaimable by merge)."),
		disk:          d("disk_bytes", "Bytes of data and hint files on disk, with the space reserved ahead of the active file."),
		files:         d("data_files", "Data files."),
		snapshots:     d("open_snapshots", "Open snapshots and iterators."),
		watches:       d("watches", "Outstanding watches of transactions (Tx.Watch), against Options.MaxWatches."),
		version:       d("commit_version", "Newest committed version."),
		writesStopped: d("writes_stopped", "1 if an I/O error stopped writes (the database must be reopened), else 0."),
		writesRefused: d("writes_refused", "1 while the disk is full: the last write was refused for lack of space and there has been no room for it since, else 0."),
		recovery:      d("recovery_duration_seconds", "Time Open spent reading data and hint files."),
		mergeRunning:  d("merge_running", "1 while a merge runs, else 0."),
		mergeDone:     d("merge_bytes_done", "Input bytes handled so far by the running merge."),
		mergeOf:       d("merge_bytes_total", "Live input bytes of the running merge."),
		keyBytes:      d("keydir_key_bytes", "Bytes of keys (and expiries) the key directory holds in memory for live keys."),
		keyDead:       d("keydir_dead_bytes", "Bytes of keys left in memory by deletions and rewrites, until the directory is compacted."),
		keyCompacts:   d("keydir_compactions_total", "Compactions of the key directory since open."),
		commits:       d("commits_total", "Commits (writes, batches, transactions) since open."),
		expired:       d("expired_keys_total", "Keys dropped from memory since open because they had expired (by active expiry, after a read found them expired, by a write to them or by a merge)."),
		merges:        d("merges_total", "Merges that finished since open."),
		mergeFailures: d("merge_failures", "Merges that failed since the last one that finished."),
		lastMerge:     d("last_merge_duration_seconds", "Wall time of the last merge that finished (0 if none has)."),
		groups:        d("commit_groups_total", "Group commits since open: one write, and under sync always one fsync, each; commits_total / commit_groups_total is the average group size."),
	}
}

// Describe implements prometheus.Collector.
func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.keys, c.expiring, c.live, c.dead, c.disk,
		c.files, c.snapshots, c.watches, c.version, c.writesStopped, c.writesRefused, c.recovery,
		c.mergeRunning, c.mergeDone, c.mergeOf, c.keyBytes, c.keyDead, c.keyCompacts,
		c.commits, c.groups, c.expired, c.merges, c.mergeFailures, c.lastMerge,
		c.mergeDuration, c.mergeIn, c.mergeOut, c.mergeRecords, c.syncDuration, c.syncErrors} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.db.Stats()
	g := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	g(c.keys, float64(st.Keys))
	g(c.expiring, float64(st.ExpiringKeys))
	g(c.live, float64(st.LiveBytes))
	g(c.dead, float64(st.DeadBytes))
	g(c.disk, float64(st.DiskBytes))
	g(c.files, float64(len(st.Files)))
	g(c.snapshots, float64(st.OpenSnapshots))
	g(c.watches, float64(st.Watches))
	g(c.version, float64(st.Version))
	g(c.writesStopped, b2f(st.WriteError != nil))
	g(c.writesRefused, b2f(st.WriteRefused != nil))
	g(c.recovery, st.Recovery.Duration.Seconds())
	g(c.mergeRunning, b2f(st.Merge.Running))
	g(c.mergeDone, float64(st.Merge.BytesDone))
	g(c.mergeOf, float64(st.Merge.BytesTotal))
	g(c.keyBytes, float64(st.KeyBytes))
	g(c.keyDead, float64(st.KeyDeadBytes))
	g(c.mergeFailures, float64(st.MergeFailures))
	g(c.lastMerge, st.LastMerge.Duration.Seconds())
	ch <- prometheus.MustNewConstMetric(c.expired, prometheus.CounterValue, float64(st.ExpiredKeys))
	ch <- prometheus.MustNewConstMetric(c.merges, prometheus.CounterValue, float64(st.Merges))
	ch <- prometheus.MustNewConstMetric(c.keyCompacts, prometheus.CounterValue, float64(st.KeyCompactions))
	ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(st.Commits))
	ch <- prometheus.MustNewConstMetric(c.groups, prometheus.CounterValue, float64(st.Groups))
	ch <- prometheus.MustNewConstMetric(c.mergeIn, prometheus.CounterValue, float64(st.MergeTotals.InputBytes))
	ch <- prometheus.MustNewConstMetric(c.mergeOut, prometheus.CounterValue, float64(st.MergeTotals.OutputBytes))
	ch <- prometheus.MustNewConstMetric(c.mergeRecords, prometheus.CounterValue, float64(st.MergeTotals.Records))
	ch <- prometheus.MustNewConstMetric(c.syncErrors, prometheus.CounterValue, float64(st.Syncs.Errors))
	ch <- histogram(c.mergeDuration, st.MergeTimings)
	ch <- histogram(c.syncDuration, st.Syncs)
}

// histogram is t as a Prometheus histogram in seconds.
func histogram(d *prometheus.Desc, t caskade.Timings) prometheus.Metric {
	buckets := make(map[float64]uint64, len(t.Buckets))
	for _, b := range t.Buckets {
		buckets[b.Le.Seconds()] = b.Count
	}
	return prometheus.MustNewConstHistogram(d, t.Count, t.Total.Seconds(), buckets)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
