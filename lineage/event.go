// Package lineage builds OpenLineage run events (spec 2-0-2) for Clink's
// jobs and sends them to an OpenLineage backend over HTTP: START when a
// job attempt runs, RUNNING on completed checkpoints (rate-limited),
// COMPLETE, FAIL or ABORT at its end, one run id per attempt. Datasets
// are named by the connectors themselves (connectors.Lineage). See
// docs/observability.md.
package lineage

import (
	"time"
)

// Schema URLs of what the events carry: the RunEvent of spec 2-0-2 and
// the facets' versions copied into testdata/spec.
const (
	SchemaURL          = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
	sqlFacetURL        = "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json#/$defs/SQLJobFacet"
	jobTypeFacetURL    = "https://openlineage.io/spec/facets/2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet"
	schemaFacetURL     = "https://openlineage.io/spec/facets/1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"
	errorFacetURL      = "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"
	parentFacetURL     = "https://openlineage.io/spec/facets/1-2-0/ParentRunFacet.json#/$defs/ParentRunFacet"
	engineFacetURL     = "https://openlineage.io/spec/facets/1-1-1/ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet"
	defaultProducerURL = "https://github.com/clink-dev/clink"
)

// Event types of a run.
const (
	Start    = "START"
	Running  = "RUNNING"
	Complete = "COMPLETE"
	Fail     = "FAIL"
	Abort    = "ABORT"
)

// Event is one OpenLineage RunEvent as it goes on the wire.
type Event struct {
	EventType string     `json:"eventType"`
	EventTime string     `json:"eventTime"`
	Producer  string     `json:"producer"`
	SchemaURL string     `json:"schemaURL"`
	Run       runJSON    `json:"run"`
	Job       jobJSON    `json:"job"`
	Inputs    []dataJSON `json:"inputs"`
	Outputs   []dataJSON `json:"outputs"`
}

type runJSON struct {
	RunID  string         `json:"runId"`
	Facets map[string]any `json:"facets,omitempty"`
}

type jobJSON struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Facets    map[string]any `json:"facets,omitempty"`
}

type dataJSON struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Facets    map[string]any `json:"facets,omitempty"`
}

// base is every facet's _producer and _schemaURL.
type base struct {
	Producer  string `json:"_producer"`
	SchemaURL string `json:"_schemaURL"`
}

type sqlFacet struct {
	base
	Query   string `json:"query"`
	Dialect string `json:"dialect,omitempty"`
}

type jobTypeFacet struct {
	base
	ProcessingType string `json:"processingType"`
	Integration    string `json:"integration"`
	JobType        string `json:"jobType"`
}

type schemaField struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
}

type schemaFacet struct {
	base
	Fields []schemaField `json:"fields"`
}

type errorFacet struct {
	base
	Message             string `json:"message"`
	ProgrammingLanguage string `json:"programmingLanguage"`
}

type parentFacet struct {
	base
	Run struct {
		RunID string `json:"runId"`
	} `json:"run"`
	Job struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"job"`
}

type engineFacet struct {
	base
	Version string `json:"version"`
	Name    string `json:"name"`
}

// Field is a dataset column: its name and SQL type.
type Field struct{ Name, Type string }

// Dataset is a table's dataset: its OpenLineage namespace and name, and
// its columns (the schema facet).
type Dataset struct {
	Namespace, Name string
	Fields          []Field
}

// Job is what every event of a job's runs says about the job.
type Job struct {
	Name string
	// SQL is the job's SQL text ("" for a submitted plan: no sql facet).
	SQL string
	// Bounded: every input ends (processingType BATCH, else STREAMING).
	Bounded         bool
	Inputs, Outputs []Dataset
}

func eventTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func (c *Client) datasets(ds []Dataset) []dataJSON {
	out := make([]dataJSON, 0, len(ds))
	for _, d := range ds {
		fields := make([]schemaField, len(d.Fields))
		for i, f := range d.Fields {
			fields[i] = schemaField{Name: f.Name, Type: f.Type}
		}
		out = append(out, dataJSON{Namespace: d.Namespace, Name: d.Name,
			Facets: map[string]any{"schema": schemaFacet{base: c.base(schemaFacetURL), Fields: fields}}})
	}
	return out
}

func (c *Client) base(url string) base { return base{Producer: c.cfg.Producer, SchemaURL: url} }

// event builds a run's event of type typ; errMsg is FAIL's message.
func (r *Run) event(typ, errMsg string, at time.Time) *Event {
	c, j := r.c, r.job
	jf := map[string]any{"jobType": jobTypeFacet{base: c.base(jobTypeFacetURL), ProcessingType: "STREAMING", Integration: "CLINK", JobType: "JOB"}}
	if j.Bounded {
		jf["jobType"] = jobTypeFacet{base: c.base(jobTypeFacetURL), ProcessingType: "BATCH", Integration: "CLINK", JobType: "JOB"}
	}
	if j.SQL != "" {
		jf["sql"] = sqlFacet{base: c.base(sqlFacetURL), Query: j.SQL, Dialect: "flink"}
	}
	rf := map[string]any{"processing_engine": engineFacet{base: c.base(engineFacetURL), Version: c.cfg.Version, Name: "Clink"}}
	if r.parent != "" {
		p := parentFacet{base: c.base(parentFacetURL)}
		p.Run.RunID = r.parent
		p.Job.Namespace, p.Job.Name = c.cfg.Namespace, j.Name
		rf["parent"] = p
	}
	if typ == Fail {
		rf["errorMessage"] = errorFacet{base: c.base(errorFacetURL), Message: errMsg, ProgrammingLanguage: "GO"}
	}
	return &Event{EventType: typ, EventTime: eventTime(at), Producer: c.cfg.Producer, SchemaURL: SchemaURL,
		Run: runJSON{RunID: r.id, Facets: rf}, Job: jobJSON{Namespace: c.cfg.Namespace, Name: j.Name, Facets: jf},
		Inputs: c.datasets(j.Inputs), Outputs: c.datasets(j.Outputs)}
}
