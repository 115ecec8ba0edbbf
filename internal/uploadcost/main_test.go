package main

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// ants starts a default pool of its own when its package is
	// initialised (the engine imports it); the rest stays checked.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// TestUploadCost runs the command on small files of every shape, in every
// mode, and checks what it prints.
func TestUploadCost(t *testing.T) {
	t.Parallel()
	line := regexp.MustCompile(`^shape=\w+ size=\d+ mode=\w+ lifted=(true|false): \S+, allocated \d+ MB, heap peak \d+ MB, resident peak \d+ MB; (.*)\n$`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-shape", "chain", "-size", "3000000"}, "HTTP 200"},
		{[]string{"-shape", "wide", "-size", "65536"}, "HTTP 200"},
		{[]string{"-shape", "dense", "-size", "65536", "-mode", "deploy"}, "deployed"},
		{[]string{"-shape", "attrs", "-size", "65536", "-mode", "read"}, "deployed"},
		{[]string{"-shape", "wide", "-size", "300000", "-mode", "deploy"}, `refused: process "p" has \d+ activities .*\(Limits.Activities\)`},
		{[]string{"-shape", "wide", "-size", "300000", "-mode", "deploy", "-lifted"}, "deployed"},
		{[]string{"-shape", "dense", "-size", "5000000"}, "HTTP 413: request too large: the form is larger than 4194304 bytes"},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, mainErr(tc.args, &out, &errOut), "%v: %s", tc.args, errOut.String())
		m := line.FindStringSubmatch(out.String())
		require.NotNil(t, m, "%v printed %q", tc.args, out.String())
		require.Regexp(t, "^"+tc.want+"$", m[2], "%v", tc.args)
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 2, mainErr([]string{"-shape", "round"}, &out, &errOut))
	require.Contains(t, errOut.String(), `unknown shape "round"`)
}
