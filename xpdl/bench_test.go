package xpdl_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// The benchmarks measure reading and validating, the work Deploy and
// "goxpdl validate" do. Targets: the whole corpus in under 1 s on one core,
// a 10,000-activity package in under 200 ms.
//
//	go test ./xpdl -run='^$' -bench=. -benchmem -cpu 1

// benchLargest is the corpus's largest file.
const benchLargest = "xpdl1/jawe-test-JavaScript.xpdl"

func BenchmarkReadValidateLargest(b *testing.B) {
	dir := requireCorpus(b)
	path := filepath.Join(dir, filepath.FromSlash(benchLargest))
	fi, err := os.Stat(path)
	require.NoError(b, err)
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	for b.Loop() {
		pkg, err := xpdl.Load(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		xpdl.Validate(pkg, nil)
	}
}

// BenchmarkReadValidateCorpus loads and validates every corpus file; one
// op is the whole corpus.
func BenchmarkReadValidateCorpus(b *testing.B) {
	dir := requireCorpus(b)
	files := corpusFiles(b, dir)
	var paths []string
	var size int64
	for _, rel := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := os.Stat(path)
		require.NoError(b, err)
		size += fi.Size()
		paths = append(paths, path)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, path := range paths {
			pkg, err := xpdl.Load(path, nil)
			if err != nil {
				continue // the one malformed file: reading it is the work
			}
			xpdl.Validate(pkg, nil)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(paths)), "ns/file")
}

// BenchmarkReadValidate10000 reads and validates a generated package of
// 10,000 activities in one process (see genPackage).
func BenchmarkReadValidate10000(b *testing.B) {
	src := genPackage(10_000)
	pkg, err := xpdl.Read(bytes.NewReader(src), nil)
	require.NoError(b, err)
	require.Empty(b, xpdl.Validate(pkg, nil).Errors())
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		pkg, err := xpdl.Read(bytes.NewReader(src), nil)
		if err != nil {
			b.Fatal(err)
		}
		xpdl.Validate(pkg, nil)
	}
}
