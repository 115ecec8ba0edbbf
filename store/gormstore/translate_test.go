package gormstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// codedError stands in for a SQLite driver error with a result code.
type codedError struct{ code int }

func (e codedError) Error() string { return fmt.Sprintf("sqlite error %d", e.code) }
func (e codedError) Code() int     { return e.code }

func TestTranslate(t *testing.T) {
	t.Parallel()
	other := errors.New("something else")
	tests := []struct {
		name string
		err  error
		want error // nil: passes through unchanged
	}{
		{"record not found", gorm.ErrRecordNotFound, store.ErrNotFound},
		{"wrapped record not found", fmt.Errorf("query: %w", gorm.ErrRecordNotFound), store.ErrNotFound},
		{"gorm duplicated key", gorm.ErrDuplicatedKey, store.ErrDuplicate},
		{"mysql duplicate entry", &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, store.ErrDuplicate},
		{"mysql deadlock", &mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, store.ErrConflict},
		{"mysql other", &mysql.MySQLError{Number: 1146, Message: "Table doesn't exist"}, nil},
		{"sqlite unique", codedError{2067}, store.ErrDuplicate},
		{"sqlite primary key", codedError{1555}, store.ErrDuplicate},
		{"sqlite busy snapshot", codedError{517}, store.ErrConflict},
		{"sqlite busy", codedError{5}, nil},
		{"sqlite message", errors.New("UNIQUE constraint failed: goxpdl_events.event_id"), store.ErrDuplicate},
		{"other", other, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := translate(tt.err)
			if tt.want == nil {
				require.Equal(t, tt.err, got)
				return
			}
			require.ErrorIs(t, got, tt.want)
			if !errors.Is(tt.err, gorm.ErrRecordNotFound) {
				require.ErrorIs(t, got, tt.err, "the driver's error stays in the chain")
			}
		})
	}
	require.NoError(t, translate(nil))
}
