package substrait

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// settingsKey names the Struct field that carries a job's runtime settings
// (SET statements such as 'execution.checkpointing.interval') in the
// plan's AdvancedExtension.
const settingsKey = "clink_job_settings"

// SetJobSettings records runtime settings in the plan (nothing when empty).
func SetJobSettings(p *pb.Plan, settings map[string]string) error {
	if len(settings) == 0 {
		return nil
	}
	fields := map[string]any{}
	for k, v := range settings {
		fields[k] = v
	}
	st, err := structpb.NewStruct(map[string]any{settingsKey: fields})
	if err != nil {
		return err
	}
	a, err := PackAny(st)
	if err != nil {
		return err
	}
	p.AdvancedExtensions = &ext.AdvancedExtension{Enhancement: a}
	return nil
}

// JobSettings reads the runtime settings of a plan (empty when none).
func JobSettings(p *pb.Plan) (map[string]string, error) {
	out := map[string]string{}
	a := p.GetAdvancedExtensions().GetEnhancement()
	if a == nil {
		return out, nil
	}
	var st structpb.Struct
	if err := a.UnmarshalTo(&st); err != nil {
		return nil, fmt.Errorf("plan settings: %w", err)
	}
	m := st.GetFields()[settingsKey].GetStructValue()
	for k, v := range m.GetFields() {
		s, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, fmt.Errorf("plan setting %s is not a string", k)
		}
		out[k] = s.StringValue
	}
	return out, nil
}

// WithoutSettings returns a copy of p without its runtime settings: what
// identifies the job's state (a new checkpoint interval keeps it).
func WithoutSettings(p *pb.Plan) *pb.Plan {
	q := proto.Clone(p).(*pb.Plan)
	q.AdvancedExtensions = nil
	return q
}

// SettingKeys lists settings in order, for messages.
func SettingKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Fingerprint identifies a plan: the SHA-256 of its deterministic
// protobuf, without its runtime settings (a new checkpoint interval or
// parallelism keeps the job's state). Checkpoints record it; a restore
// refuses another plan's.
func Fingerprint(plan *pb.Plan) (string, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(WithoutSettings(plan))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "plan-sha256:" + hex.EncodeToString(sum[:]), nil
}
