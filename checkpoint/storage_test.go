package checkpoint_test

import (
	"testing"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/storagetest"
)

func TestLocalStorage(t *testing.T) {
	storagetest.Run(t, checkpoint.LocalStorage(t.TempDir()), storagetest.Options{})
}

func TestJoinLoc(t *testing.T) {
	for _, c := range [][3]string{
		{"/ck", "job", "/ck/job"},
		{"s3://b/p", "job", "s3://b/p/job"},
		{"s3://b/p/", "savepoints", "s3://b/p/savepoints"},
		{"gs://b", "job", "gs://b/job"},
	} {
		if got := checkpoint.JoinLoc(c[0], c[1]); got != c[2] {
			t.Errorf("JoinLoc(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
	if _, err := checkpoint.NewStore("nope://b/p", checkpoint.Options{}); err == nil {
		t.Error("NewStore of an unregistered scheme: no error")
	}
}

func TestLocalStore(t *testing.T) {
	storagetest.RunStore(t, checkpoint.LocalStorage(t.TempDir()))
}
