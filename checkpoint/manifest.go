package checkpoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ManifestName is the file whose presence makes a checkpoint complete.
const ManifestName = "_metadata.json"

// Meta is what the caller of Commit says about the checkpoint.
type Meta struct {
	// Job names the job, for people.
	Job string
	// Fingerprint identifies the plan the state belongs to (opaque to this
	// package), for people; a restore compares it with the plan being
	// started only when the manifest lists no Operators.
	Fingerprint string
	// Properties are free-form strings kept with the checkpoint.
	Properties map[string]string
	// Parts are parts other processes wrote into the checkpoint's
	// directory (Store.Join), listed in the manifest with this Writer's.
	Parts []PartInfo
	// Operators are the job's stateful operators with their state
	// signatures: a restore matches them with the new job's (Compare).
	Operators []OperatorInfo
	// Epoch, when not 0, is the leader epoch of the Coordinator that
	// commits: Commit refuses it when the store was fenced with a newer
	// one (Store.Fence).
	Epoch uint64
}

// PropSyncDuration is the manifest property with the longest synchronous
// part of the checkpoint's snapshots, in milliseconds: how long an
// operator stopped at the barrier.
const PropSyncDuration = "sync_duration_ms"

// Manifest is the content of _metadata.json (docs/state-format.md).
type Manifest struct {
	FormatVersion  int               `json:"format_version"`
	CheckpointID   uint64            `json:"checkpoint_id"`
	Job            string            `json:"job"`
	Fingerprint    string            `json:"fingerprint"`
	Created        time.Time         `json:"created"`
	MaxParallelism int               `json:"max_parallelism"`
	Properties     map[string]string `json:"properties,omitempty"`
	Parts          []PartInfo        `json:"parts"`
	// Operators is absent in checkpoints of earlier builds, which a
	// restore then matches by Fingerprint.
	Operators []OperatorInfo `json:"operators,omitempty"`
}

// PartInfo describes one part file in the manifest.
type PartInfo struct {
	File     string `json:"file"` // base name inside chk-<id>/
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
	Bytes    int64  `json:"bytes"`
	Rows     int64  `json:"rows"`
	SHA256   string `json:"sha256"` // lowercase hex of the whole file
	// Checkpoint is the checkpoint whose directory holds File, when that
	// is not the manifest's own: a part of a chain written earlier.
	Checkpoint uint64 `json:"checkpoint,omitempty"`
	// Delta marks a part that holds only what changed since the part
	// before it in its chain (docs/state-format.md#incremental-checkpoints).
	Delta bool `json:"delta,omitempty"`
	// Chain lists, for a delta, the parts it builds on, oldest first: a
	// full part, then deltas. Restoring the subtask reads the chain and
	// then this part.
	Chain []PartInfo `json:"chain,omitempty"`
}

// dir is the checkpoint directory holding the part, for a manifest of
// checkpoint id.
func (p PartInfo) dir(id uint64) uint64 {
	if p.Checkpoint != 0 {
		return p.Checkpoint
	}
	return id
}

// decodeManifest parses and checks a manifest; path names it in errors and
// id is the checkpoint its directory says it is.
func decodeManifest(path string, id uint64, data []byte) (*Manifest, error) {
	// Read the version first, so that a future layout is reported as a
	// version problem rather than as a parse error.
	var head struct {
		FormatVersion *json.RawMessage `json:"format_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fileErr(path, ErrCorrupt, "invalid JSON (%d bytes; truncated?): %v", len(data), err)
	}
	if head.FormatVersion == nil {
		return nil, fileErr(path, ErrCorrupt, "no format_version")
	}
	if v := string(bytes.TrimSpace(*head.FormatVersion)); v != fmt.Sprint(FormatVersion) && v != fmt.Sprint(FormatVersionIncremental) {
		return nil, fileErr(path, ErrVersion, "unsupported format version %s (this build reads versions %d and %d)", v, FormatVersion, FormatVersionIncremental)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fileErr(path, ErrCorrupt, "invalid manifest: %v", err)
	}
	if m.Incremental() != (m.FormatVersion == FormatVersionIncremental) {
		return nil, fileErr(path, ErrCorrupt, "format_version %d, but delta parts: %t (version %d is for checkpoints with delta parts)", m.FormatVersion, m.Incremental(), FormatVersionIncremental)
	}
	if err := m.check(id); err != nil {
		return nil, &FileError{Path: path, Kind: ErrCorrupt, Err: err}
	}
	return &m, nil
}

func (m *Manifest) check(id uint64) error {
	if m.CheckpointID != id {
		return fmt.Errorf("checkpoint_id %d, but the directory is for checkpoint %d", m.CheckpointID, id)
	}
	if m.MaxParallelism < 1 || m.MaxParallelism > maxMaxParallelism {
		return fmt.Errorf("max_parallelism %d out of [1, %d]", m.MaxParallelism, maxMaxParallelism)
	}
	if m.Created.IsZero() {
		return errors.New("no creation time")
	}
	seen := make(map[string]bool, len(m.Parts))
	for i, p := range m.Parts {
		if err := checkOperatorName(p.Operator); err != nil {
			return fmt.Errorf("parts[%d]: %w", i, err)
		}
		if p.Subtask < 0 {
			return fmt.Errorf("parts[%d]: negative subtask %d", i, p.Subtask)
		}
		if want := partFileName(p.Operator, p.Subtask); p.File != want {
			return fmt.Errorf("parts[%d]: file %q, want %q", i, p.File, want)
		}
		if seen[p.File] {
			return fmt.Errorf("parts[%d]: %s listed twice", i, p.File)
		}
		seen[p.File] = true
		if err := p.checkFile(); err != nil {
			return fmt.Errorf("parts[%d]: %w", i, err)
		}
		if p.Checkpoint != 0 {
			return fmt.Errorf("parts[%d]: the head of a chain must be the checkpoint's own file", i)
		}
		if p.Delta != (len(p.Chain) > 0) {
			return fmt.Errorf("parts[%d]: a delta part needs a chain and only a delta has one", i)
		}
		prev := uint64(0)
		for k, c := range p.Chain {
			if err := c.checkFile(); err != nil {
				return fmt.Errorf("parts[%d].chain[%d]: %w", i, k, err)
			}
			switch {
			case c.Operator != p.Operator || c.Subtask != p.Subtask || c.File != p.File:
				return fmt.Errorf("parts[%d].chain[%d]: %s, not a part of %s subtask %d", i, k, c.File, p.Operator, p.Subtask)
			case c.Checkpoint <= prev || c.Checkpoint >= id:
				return fmt.Errorf("parts[%d].chain[%d]: checkpoint %d out of order (chains ascend and precede checkpoint %d)", i, k, c.Checkpoint, id)
			case c.Delta != (k > 0):
				return fmt.Errorf("parts[%d].chain[%d]: a chain starts with one full part and goes on with deltas", i, k)
			case len(c.Chain) > 0:
				return fmt.Errorf("parts[%d].chain[%d]: nested chain", i, k)
			}
			prev = c.Checkpoint
		}
	}
	ops := make(map[string]bool, len(m.Operators))
	for i, o := range m.Operators {
		if err := checkOperatorName(o.Operator); err != nil {
			return fmt.Errorf("operators[%d]: %w", i, err)
		}
		if ops[o.Operator] {
			return fmt.Errorf("operators[%d]: %s listed twice", i, o.Operator)
		}
		ops[o.Operator] = true
	}
	return nil
}

func (p PartInfo) checkFile() error {
	if p.Bytes < 0 || p.Rows < 0 {
		return errors.New("negative bytes or rows")
	}
	if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 || hex.EncodeToString(b) != p.SHA256 {
		return fmt.Errorf("sha256 %q is not 64 lowercase hex digits", p.SHA256)
	}
	return nil
}

// Incremental reports whether the checkpoint has delta parts: it then
// needs files of earlier checkpoints.
func (m *Manifest) Incremental() bool {
	for _, p := range m.Parts {
		if p.Delta {
			return true
		}
	}
	return false
}

// Files are the files the checkpoint needs, as (checkpoint directory id,
// file name) pairs: its own parts and every part of their chains.
func (m *Manifest) Files() []PartInfo {
	var out []PartInfo
	for _, p := range m.Parts {
		for _, c := range p.Chain {
			out = append(out, c)
		}
		q := p
		q.Chain, q.Checkpoint = nil, m.CheckpointID
		out = append(out, q)
	}
	return out
}
