package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// collector starts one real collector (loopback TCP, embedded store) holding
// the storetest sample batch and jobs.
func collector(t *testing.T) string {
	t.Helper()
	return servertest.Start(t, []*stratav1.Batch{storetest.Sample(1)}, storetest.Jobs()).Addr
}

// strata runs the strata command line in-process and returns its stdout.
func strata(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("strata %s: %v (stderr %q)", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// jsonLines decodes one object per line into a slice of T.
func jsonLines[T any](t *testing.T, s string) []T {
	t.Helper()
	var out []T
	dec := json.NewDecoder(strings.NewReader(s))
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode %q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}

func TestCommandErrors(t *testing.T) {
	addr := collector(t)
	for name, args := range map[string][]string{
		"no app":       {"numa", "--collector", addr},
		"bad output":   {"faults", "--collector", addr, "--app", "x", "-o", "yaml"},
		"bad severity": {"jobs", "--collector", addr, "--severity", "meh"},
		"unknown job":  {"job", "--collector", addr, "job_nope"},
		"no job id":    {"job", "--collector", addr},
		"bad rdd":      {"trace", "--collector", addr, "--app", "x", "--rdd", "seven"},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("%s: no error (stdout %q)", name, out.String())
		}
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"job", "--collector", addr, "job_nope"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "(NotFound)") {
		t.Errorf("unknown job error = %v, want the NotFound code", err)
	}
	if err := run(context.Background(), []string{"trace", "-h"}, &out, &errOut); err != nil {
		t.Errorf("trace -h: %v", err)
	}
}
