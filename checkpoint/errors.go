package checkpoint

import (
	"errors"
	"fmt"
)

// Kinds of failure, for errors.Is. Every error about a file is a *FileError
// that names the file; its Kind is one of these.
var (
	// ErrCorrupt: a part or manifest exists but its bytes are wrong
	// (truncated, checksum mismatch, not Arrow, broken invariants).
	ErrCorrupt = errors.New("corrupt")
	// ErrVersion: the file was written in a format version this build does
	// not read.
	ErrVersion = errors.New("unsupported format version")
	// ErrMissing: a file the checkpoint needs does not exist.
	ErrMissing = errors.New("missing")
	// ErrIncomplete: the checkpoint directory has no manifest (a crash or an
	// abandoned write); it is not a restore point.
	ErrIncomplete = errors.New("incomplete")
)

// FileError reports what is wrong with one file of a checkpoint.
type FileError struct {
	Path string // the file (or directory) concerned
	Kind error  // ErrCorrupt, ErrVersion, ErrMissing, ErrIncomplete, or nil for I/O errors
	Err  error  // what is wrong, in words
}

func (e *FileError) Error() string { return "checkpoint: " + e.Path + ": " + e.Err.Error() }

// Unwrap exposes the underlying error (an *os.PathError, for instance).
func (e *FileError) Unwrap() error { return e.Err }

// Is matches the error's Kind, so errors.Is(err, ErrCorrupt) works.
func (e *FileError) Is(target error) bool { return e.Kind != nil && target == e.Kind }

func fileErr(path string, kind error, format string, args ...any) *FileError {
	return &FileError{Path: path, Kind: kind, Err: fmt.Errorf(format, args...)}
}
