package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// corpusDirs are the corpus folders, in the order the report shows them.
var corpusDirs = []string{"xpdl1", "xpdl2"}

// corpusFile is one .xpdl file of the corpus.
type corpusFile struct {
	// Dir is the corpus folder ("xpdl1"), Name the file name in it.
	Dir, Name string
	// Path is the path the goxpdl commands are given.
	Path string
	// Processes are the WorkflowProcess ids, sorted.
	Processes []string
	// calls maps a calling process id to the process ids its SubFlow
	// activities name.
	calls map[string][]string
	// parseErr says why the process ids could not be read; the file is
	// then reported by what validate says about it.
	parseErr error
}

// Rel is the file's path inside the corpus ("xpdl1/M1.xpdl").
func (f *corpusFile) Rel() string { return f.Dir + "/" + f.Name }

// listCorpus returns the .xpdl files of each corpus folder, sorted by
// name, with their processes read. It fails if a folder is missing.
func listCorpus(root string) ([]*corpusFile, error) {
	var files []*corpusFile
	for _, dir := range corpusDirs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			return nil, fmt.Errorf("read corpus folder: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.EqualFold(filepath.Ext(e.Name()), ".xpdl") {
				continue
			}
			f := &corpusFile{Dir: dir, Name: e.Name(), Path: filepath.Join(root, dir, e.Name())}
			data, err := os.ReadFile(f.Path)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", f.Rel(), err)
			}
			f.Processes, f.calls, f.parseErr = parseProcesses(data)
			files = append(files, f)
		}
	}
	sort.SliceStable(files, func(i, j int) bool {
		if files[i].Dir != files[j].Dir {
			return slices.Index(corpusDirs, files[i].Dir) < slices.Index(corpusDirs, files[j].Dir)
		}
		return files[i].Name < files[j].Name
	})
	return files, nil
}

// parseProcesses returns the ids of the WorkflowProcess elements of an
// XPDL document (any namespace prefix, any XPDL version), sorted, and the
// processes each one's SubFlow activities name.
func parseProcesses(data []byte) ([]string, map[string][]string, error) {
	// A comment before the XML declaration is not well-formed XML, but the
	// corpus has such a file (jawe-test-JavaScript.xpdl) and goxpdl reads
	// it; skip to the declaration.
	if i := bytes.Index(data, []byte("<?xml")); i > 0 {
		data = data[i:]
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) {
		// Only element names and Id attributes matter here, and the corpus
		// writes them in ASCII whatever the declared encoding.
		return r, nil
	}
	var (
		ids     []string
		calls   = map[string][]string{}
		current string // the process being read
		depth   int    // element depth of the current process
		level   int
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			level++
			switch t.Name.Local {
			case "WorkflowProcess":
				if id := attr(t, "Id"); id != "" {
					ids = append(ids, id)
					current, depth = id, level
				}
			case "SubFlow":
				// The called process is the SubFlow's Id in XPDL 1 and 2.
				if id := attr(t, "Id"); id != "" && current != "" {
					calls[current] = append(calls[current], id)
				}
			}
		case xml.EndElement:
			if level == depth {
				current, depth = "", 0
			}
			level--
		}
	}
	sort.Strings(ids)
	return ids, calls, nil
}

// attr returns the value of the attribute with the given local name.
func attr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// subflowKey names a process of a corpus folder.
type subflowKey struct{ dir, process string }

// subflows returns the processes that another process of the same corpus
// folder calls as a SubFlow. The corpus' multi-file examples (the JaWE
// repositories, the Bonita nestedSubflow and subflowParams files) call
// processes of sibling files, so the folder, not the file, is the scope.
func subflows(files []*corpusFile) map[subflowKey]bool {
	called := map[subflowKey]bool{}
	for _, f := range files {
		for caller, callees := range f.calls {
			for _, callee := range callees {
				if callee != caller {
					called[subflowKey{f.Dir, callee}] = true
				}
			}
		}
	}
	return called
}
