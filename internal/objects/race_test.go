package objects

import (
	"context"
	"errors"
	"testing"

	"github.com/lapis-dev/lapis/internal/storage"
)

// A client that named no resourceVersion never sees a conflict: while its request has time the
// write is retried, after that it gets its timeout.
func TestRaceError(t *testing.T) {
	live := context.Background()
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	other := errors.New("boom")
	tests := []struct {
		name         string
		ctx          context.Context
		err          error
		precondition bool
		retry        bool
		want         error
	}{
		{"conflict, time left: retry", live, storage.ErrConflict, false, true, storage.ErrConflict},
		{"conflict, time up: the request's timeout", expired, storage.ErrConflict, false, false, context.Canceled},
		{"conflict the client asked for", live, storage.ErrConflict, true, false, storage.ErrConflict},
		{"conflict the client asked for, time up", expired, storage.ErrConflict, true, false, storage.ErrConflict},
		{"other errors pass", expired, other, false, false, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryConflict(tt.ctx, tt.err, tt.precondition); got != tt.retry {
				t.Errorf("retry %v, want %v", got, tt.retry)
			}
			if got := raceError(tt.ctx, tt.err, tt.precondition); !errors.Is(got, tt.want) {
				t.Errorf("error %v, want %v", got, tt.want)
			}
		})
	}
}
