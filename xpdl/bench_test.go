package xpdl_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
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
//
// On a shared machine wall times swing by a factor of two from run to
// run; compare BenchmarkReadValidate10000 with BenchmarkRawToken10000
// from the same run (their ratio is steadier), and run -count 5 or more.

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

// BenchmarkRead10000 and BenchmarkValidate10000 split
// BenchmarkReadValidate10000 in its two halves.
func BenchmarkRead10000(b *testing.B) {
	src := genPackage(10_000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := xpdl.Read(bytes.NewReader(src), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate10000(b *testing.B) {
	pkg, err := xpdl.Read(bytes.NewReader(genPackage(10_000)), nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		xpdl.Validate(pkg, nil)
	}
}

// BenchmarkRawToken10000 runs encoding/xml's tokenizer alone over the
// generated package, the way the reader drives it: the floor under
// BenchmarkRead10000, which cannot be faster than this.
func BenchmarkRawToken10000(b *testing.B) {
	src := genPackage(10_000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		dec := xml.NewDecoder(bytes.NewReader(src))
		for {
			dec.InputPos()
			dec.InputOffset()
			if _, err := dec.RawToken(); err != nil {
				if !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				break
			}
		}
	}
}
