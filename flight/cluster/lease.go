package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The leader lease of highly available Coordinators (docs/cluster.md#high-availability).
//
// The lease is one JSON file, <ha dir>/leader.json: the holder's id and
// addresses, an epoch and an expiry. Every read-modify-write of it runs
// under an exclusive flock(2) of <ha dir>/leader.lock, so two candidates
// cannot both win: the one that gets the lock first writes epoch+1, the
// other then reads a lease that has not expired. The file itself is
// written whole (a temporary file, fsync, rename), so a reader never sees
// half of it. This assumes a POSIX file system with atomic rename and
// working flock (local disks; NFSv4 emulates flock with byte-range locks;
// older NFS and object stores do not qualify). Expiry is wall-clock time:
// the Coordinators' clocks must agree to well within the lease.
type leaseRecord struct {
	Holder   string `json:"holder"`
	Flight   string `json:"flight_addr"`
	HTTP     string `json:"http_addr,omitempty"`
	Epoch    uint64 `json:"epoch"`
	Expires  int64  `json:"expires_unix_ms"`
	Acquired int64  `json:"acquired_unix_ms"`
}

func (r *leaseRecord) expired(now time.Time) bool { return now.UnixMilli() >= r.Expires }

// lease is one Coordinator's view of the lease.
type lease struct {
	dir         string
	id          string
	flight, web string
	ttl         time.Duration
}

func (l *lease) path() string { return filepath.Join(l.dir, "leader.json") }

// readLease reads the lease record of dir (nil: none yet).
func readLease(dir string) (*leaseRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, "leader.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r leaseRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("ha dir %s: leader.json: %v", dir, err)
	}
	return &r, nil
}

// tryAcquire takes the lease when it is free or expired (epoch+1), or
// renews it when this Coordinator holds it at epoch. It returns the record
// now on file and whether this Coordinator holds it; a holder whose
// record was replaced (another took over) gets false.
func (l *lease) tryAcquire(epoch uint64) (*leaseRecord, bool, error) {
	unlock, err := lockFile(filepath.Join(l.dir, "leader.lock"), l.ttl)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	cur, err := readLease(l.dir)
	if err != nil {
		return nil, false, err
	}
	now := time.Now()
	next := &leaseRecord{Holder: l.id, Flight: l.flight, HTTP: l.web, Expires: now.Add(l.ttl).UnixMilli(), Acquired: now.UnixMilli()}
	switch {
	case epoch != 0 && cur != nil && cur.Holder == l.id && cur.Epoch == epoch:
		next.Epoch, next.Acquired = epoch, cur.Acquired // renew
	case epoch != 0:
		return cur, false, nil // it was taken over
	case cur == nil:
		next.Epoch = 1
	case cur.expired(now) || cur.Holder == l.id:
		// An expired lease, or this Coordinator's own from before a
		// restart: a new epoch either way.
		next.Epoch = cur.Epoch + 1
	default:
		return cur, false, nil
	}
	if err := writeFileAtomic(l.path(), mustJSON(next)); err != nil {
		return nil, false, err
	}
	return next, true, nil
}

// release gives the lease up (a clean shutdown), so a standby takes over
// at once rather than after the expiry.
func (l *lease) release(epoch uint64) {
	unlock, err := lockFile(filepath.Join(l.dir, "leader.lock"), l.ttl)
	if err != nil {
		return
	}
	defer unlock()
	cur, err := readLease(l.dir)
	if err != nil || cur == nil || cur.Holder != l.id || cur.Epoch != epoch {
		return
	}
	cur.Expires = time.Now().UnixMilli()
	writeFileAtomic(l.path(), mustJSON(cur))
}

// writeFileAtomic writes path whole: a temporary file beside it, fsync,
// rename, fsync of the directory.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
