package statemachine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Bookmark is where a machine instance waits: the work item of the state
// it is in. Start and Resume hand one out; Resume takes it back to move
// the machine on. It is durable: its text (String, MarshalText) can be
// kept anywhere (a database row, a link in an e-mail) and resumed after
// the program restarted, on any engine of the database.
//
// A bookmark is valid until it is resumed or its instance ends (Abort, or
// an operator's command): then Resume refuses it with a *BookmarkError
// (ErrStaleBookmark; ErrBookmarkResumed when it was resumed) and changes
// nothing. It is not a credential: who may resume a state's work is the
// engine's work-item rule (ResumeOpts.User).
type Bookmark struct {
	// Machine is the machine's ID.
	Machine string
	// State is the state the machine waits in.
	State string
	// Instance is the process instance of the machine.
	Instance int64
	// WorkItem is the engine's work item of the state (engine.WorkItem).
	WorkItem int64
}

// IsZero reports whether b is the zero Bookmark (none).
func (b Bookmark) IsZero() bool { return b == Bookmark{} }

// String is the bookmark's text, MACHINE/STATE/INSTANCE/WORKITEM
// ("approval/review/1234/5678"), which ParseBookmark reads; "" for the
// zero Bookmark.
func (b Bookmark) String() string {
	if b.IsZero() {
		return ""
	}
	return b.Machine + "/" + b.State + "/" + strconv.FormatInt(b.Instance, 10) + "/" + strconv.FormatInt(b.WorkItem, 10)
}

// MarshalText writes String, so that a Bookmark is a JSON string.
func (b Bookmark) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads what MarshalText wrote (ParseBookmark); empty
// text is the zero Bookmark.
func (b *Bookmark) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*b = Bookmark{}
		return nil
	}
	parsed, err := ParseBookmark(string(text))
	if err != nil {
		return err
	}
	*b = parsed
	return nil
}

// ParseBookmark reads a bookmark's text (Bookmark.String). Text that is
// not one is refused with an error matching ErrBadBookmark.
func ParseBookmark(text string) (Bookmark, error) {
	parts := strings.Split(text, "/")
	if len(parts) != 4 || !name.MatchString(parts[0]) || !name.MatchString(parts[1]) {
		return Bookmark{}, fmt.Errorf("%w: %q is not MACHINE/STATE/INSTANCE/WORKITEM", ErrBadBookmark, text)
	}
	instance, err1 := strconv.ParseInt(parts[2], 10, 64)
	item, err2 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || instance <= 0 || item <= 0 {
		return Bookmark{}, fmt.Errorf("%w: %q: the instance and work item must be positive integers", ErrBadBookmark, text)
	}
	return Bookmark{Machine: parts[0], State: parts[1], Instance: instance, WorkItem: item}, nil
}

// Errors about bookmarks.
var (
	// ErrBadBookmark: the bookmark is not one of this machine's: its
	// text is malformed, it names another machine, or its work item is
	// not of the instance and state it names.
	ErrBadBookmark = errors.New("not a bookmark of this machine")
	// ErrStaleBookmark: the bookmark's state is over: it was resumed,
	// its instance ended (aborted, completed) or its work was withdrawn.
	// Resume changed nothing.
	ErrStaleBookmark = errors.New("stale bookmark")
	// ErrBookmarkResumed: the bookmark was resumed already (a duplicate
	// Resume, or the loser of two at once). It also matches
	// ErrStaleBookmark.
	ErrBookmarkResumed = errors.New("bookmark resumed already")
)

// BookmarkError is Resume's refusal of a bookmark that is no longer
// valid. It matches ErrStaleBookmark, and ErrBookmarkResumed when the
// bookmark was resumed.
type BookmarkError struct {
	// Bookmark is the bookmark refused.
	Bookmark Bookmark
	// Reason says what became of it.
	Reason string

	resumed bool
}

func (e *BookmarkError) Error() string {
	return fmt.Sprintf("bookmark %s: %s", e.Bookmark, e.Reason)
}

// Is matches ErrStaleBookmark, and ErrBookmarkResumed for a bookmark that
// was resumed.
func (e *BookmarkError) Is(target error) bool {
	return target == ErrStaleBookmark || (e.resumed && target == ErrBookmarkResumed)
}
