package main

import (
	"encoding/json"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// A release build reports its module version, revision, time and whether
// the tree was modified, in text and in JSON; a binary without build
// information still reports the Go version.
func TestReadVersion(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/goxpdl/goxpdl", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-11-24T12:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	v := readVersion(bi, true)
	text := v.String()
	require.Contains(t, text, "goxpdl v1.2.3\n")
	require.Contains(t, text, "module   github.com/goxpdl/goxpdl\n")
	require.Contains(t, text, "revision 0123456789abcdef (modified)\n")
	require.Contains(t, text, "time     2026-11-24T12:00:00Z\n")
	require.Contains(t, text, "go       go1.26.0 ")

	data, err := json.Marshal(v)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, map[string]any{
		"module": "github.com/goxpdl/goxpdl", "version": "v1.2.3", "revision": "0123456789abcdef",
		"time": "2026-11-24T12:00:00Z", "modified": true, "go": "go1.26.0", "platform": v.Platform,
	}, got)

	none := readVersion(nil, false)
	require.Equal(t, "unknown", none.Version)
	require.NotEmpty(t, none.Go)
	require.NotContains(t, none.String(), "revision")
}
