package gormstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// BenchmarkSingleRowCommit is the raw single-row commits/s baseline that
// the engine benchmark compares against: each operation is one transaction
// (InTx) inserting one history row, on a durable database (SQLite: a file,
// WAL, synchronous=FULL; MySQL: the server's own settings). It reports
// ns/op and commits/s, sequentially and with b.RunParallel
// (GOMAXPROCS goroutines; -cpu sets it).
//
//	go test -run '^$' -bench SingleRowCommit -benchtime 2s ./store/gormstore
//	GOXPDL_MYSQL_DSN='root:@tcp(127.0.0.1:3306)/test' go test -run '^$' -bench SingleRowCommit -benchtime 2s ./store/gormstore
func BenchmarkSingleRowCommit(b *testing.B) {
	for _, d := range []dialect{{"SQLite", openSQLiteFile}, {"MySQL", openMySQL}} {
		b.Run(d.name, func(b *testing.B) {
			b.Run("Serial", func(b *testing.B) {
				s := newStore(b, d.open(b))
				ctx := b.Context()
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					commitOne(ctx, b, s)
				}
				reportCommits(b)
			})
			b.Run("Parallel", func(b *testing.B) {
				s := newStore(b, d.open(b))
				ctx := b.Context()
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						commitOne(ctx, b, s)
					}
				})
				reportCommits(b)
			})
		})
	}
}

// benchEntry is the row every commit inserts.
var benchEntry = store.HistoryEntry{
	ProcessInstanceID: 1, Subject: store.SubjectProcess, FromState: "Initiated", ToState: "Running",
	Actor: "bench", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
}

// benchIDs gives the committed rows their ids.
var benchIDs atomic.Int64

func commitOne(ctx context.Context, b *testing.B, s *gormstore.Store) {
	err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		e := benchEntry
		e.ID = benchIDs.Add(1)
		return tx.InsertHistory(ctx, []store.HistoryEntry{e})
	})
	if err != nil {
		b.Error(err) // Fatal is not allowed in RunParallel's goroutines
	}
}

func reportCommits(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "commits/s")
	}
}
