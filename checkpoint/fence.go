package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EpochName is the file in a store's directory holding the newest leader
// epoch of a highly available Coordinator that took the job over. A
// Coordinator that takes a job over fences the store with its epoch before
// it restores; a Coordinator of an older epoch then cannot complete a
// checkpoint there (its manifest write is refused), so its sinks, which
// publish only completed checkpoints, cannot commit either.
//
// On an object store the fence is read, then written (no conditional
// write): two Coordinators fencing at the same moment could both pass,
// and an old leader's manifest may slip in between the new leader's
// fence and its own check. Leases keep that window short; it is
// documented in docs/checkpoints.md.
const EpochName = "leader-epoch"

// ErrFenced is the error of a commit by a Coordinator of an older epoch.
var ErrFenced = errors.New("fenced")

// Epoch is the epoch the store is fenced with (0: none).
func (s *Store) Epoch() (uint64, error) {
	b, err := s.fs.ReadFile(EpochName)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	e, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %s: %v", s.fs.Path(EpochName), err)
	}
	return e, nil
}

// Fence raises the store's epoch to epoch (never lowers it); it fails when
// the store already has a newer one.
func (s *Store) Fence(epoch uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.Epoch()
	if err != nil {
		return err
	}
	if cur > epoch {
		return fmt.Errorf("checkpoint: %s is fenced by epoch %d, newer than %d: %w", s.dir, cur, epoch, ErrFenced)
	}
	if cur == epoch {
		return nil
	}
	return s.fs.WriteFile(EpochName, []byte(strconv.FormatUint(epoch, 10)+"\n"))
}

// CheckEpoch refuses epoch when the store is fenced with a newer one
// (epoch 0: no check).
func (s *Store) CheckEpoch(epoch uint64) error {
	if epoch == 0 {
		return nil
	}
	cur, err := s.Epoch()
	if err != nil {
		return err
	}
	if cur > epoch {
		return fmt.Errorf("a Coordinator of epoch %d took the job over; epoch %d may not complete checkpoints: %w", cur, epoch, ErrFenced)
	}
	return nil
}
