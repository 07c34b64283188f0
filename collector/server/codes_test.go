package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/collector/ingest"
	"github.com/stratatrace/strata/collector/store"
)

func TestStatusTable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{fmt.Errorf("append: %w", store.ErrInvalidBatch), codes.InvalidArgument},
		{fmt.Errorf("trace: %w", store.ErrInvalidQuery), codes.InvalidArgument},
		{fmt.Errorf("job x: %w", store.ErrNotFound), codes.NotFound},
		{fmt.Errorf("append: %w", store.ErrClosed), codes.Unavailable},
		{ingest.ErrDraining, codes.Unavailable},
		{context.Canceled, codes.Canceled},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{status.Error(codes.ResourceExhausted, "too big"), codes.ResourceExhausted},
		{errors.New("disk on fire"), codes.Internal},
	} {
		if got := status.Code(toStatus(tc.err)); got != tc.want {
			t.Errorf("toStatus(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}
