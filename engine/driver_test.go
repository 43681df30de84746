package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// logTask records what the driver hands a task, in order.
type logTask struct{ events []string }

func (l *logTask) data(in int, b *vector.Batch) error {
	l.events = append(l.events, fmt.Sprintf("data %d", in))
	b.Release()
	return nil
}
func (l *logTask) watermark(wm int64) error {
	l.events = append(l.events, fmt.Sprintf("wm %d", wm))
	return nil
}
func (l *logTask) status(idle bool) error {
	l.events = append(l.events, statusMessage(idle).Kind.String())
	return nil
}
func (l *logTask) barrier(id uint64) error {
	l.events = append(l.events, fmt.Sprintf("barrier %d", id))
	return nil
}

type step struct {
	in int
	m  Message
}

func wmAt(in int, wm int64) step { return step{in, Message{Kind: KindWatermark, Watermark: wm}} }
func idleAt(in int) step         { return step{in, Message{Kind: KindIdle}} }
func activeAt(in int) step       { return step{in, Message{Kind: KindActive}} }
func barrierAt(in int, id uint64) step {
	return step{in, Message{Kind: KindBarrier, Checkpoint: id}}
}
func endAt(in int) step { return step{in, Message{Kind: KindEnd}} }

func oneRow(mem memory.Allocator) *vector.Batch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(mem)
	b.Append(1)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
	col.Release()
	return vector.New(rec)
}

// drive runs a driver over n inputs fed the steps one at a time: the
// channels are unbuffered, so each message is handled before the next is
// received, and the task's log is deterministic.
func drive(t *testing.T, n int, steps []step) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	chans := make([]chan Message, n)
	in := make([]<-chan Message, n)
	for i := range chans {
		chans[i] = make(chan Message)
		in[i] = chans[i]
	}
	go func() {
		for _, s := range steps {
			if s.m.Kind == KindData {
				s.m.Batch = oneRow(mem)
			}
			chans[s.in] <- s.m
		}
		for _, c := range chans {
			close(c)
		}
	}()
	task := &logTask{}
	ended, err := (&driver{in: in}).run(task)
	if err != nil || !ended {
		t.Fatalf("driver: ended %v, err %v", ended, err)
	}
	mem.AssertSize(t, 0)
	return task.events
}

func checkEvents(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("task saw\n%q\nwant\n%q", got, want)
	}
}

// TestDriverIdleInputDoesNotHoldWatermark: the watermark is the minimum
// over the inputs that are not idle.
func TestDriverIdleInputDoesNotHoldWatermark(t *testing.T) {
	got := drive(t, 3, []step{
		wmAt(0, 10), wmAt(1, 20),
		idleAt(2), // the watermark rises to 10 without input 2
		wmAt(0, 30),
		endAt(0),
		endAt(1), // the one left is idle
		endAt(2),
	})
	checkEvents(t, got, []string{"wm 10", "wm 20", "idle", "wm 9223372036854775807"})
}

// TestDriverIdleInputRejoins: an input that speaks again counts again,
// from where its watermark is; the task's watermark never decreases.
func TestDriverIdleInputRejoins(t *testing.T) {
	got := drive(t, 2, []step{
		idleAt(1),
		wmAt(0, 100),
		activeAt(1),
		wmAt(1, 50), // below the task's watermark: it holds
		{1, Message{Kind: KindData}},
		wmAt(0, 200),
		wmAt(1, 150),
		wmAt(1, 300),
		endAt(0), endAt(1),
	})
	checkEvents(t, got, []string{"wm 100", "data 1", "wm 150", "wm 200", "wm 300", "wm 9223372036854775807"})
}

// TestDriverAllInputsIdle: with every input idle the watermark holds and
// the task is idle; the first input to speak makes it active before its
// rows.
func TestDriverAllInputsIdle(t *testing.T) {
	got := drive(t, 2, []step{
		wmAt(0, 10), wmAt(1, 20),
		idleAt(0), // 20 without input 0
		idleAt(1), // all idle: holds at 20
		wmAt(1, 40),
		idleAt(1), // a repeated status changes nothing
		activeAt(0),
		{0, Message{Kind: KindData}},
		wmAt(0, 30),
		idleAt(0),
		endAt(1), // the one left is idle: still idle
		activeAt(0),
		endAt(0),
	})
	checkEvents(t, got, []string{
		"wm 10", "wm 20", "idle", "active", "data 0", "wm 30", "idle", "active",
		"wm 9223372036854775807",
	})
}

// TestDriverBarrierAlignsWithIdleInput: an idle input still takes part in
// barrier alignment: the barrier passes once it has delivered it too.
func TestDriverBarrierAlignsWithIdleInput(t *testing.T) {
	got := drive(t, 3, []step{
		idleAt(2),
		barrierAt(0, 1), barrierAt(1, 1),
		{2, Message{Kind: KindData}}, // before the barrier on input 2
		barrierAt(2, 1),
		wmAt(0, 5), wmAt(1, 7),
		endAt(0), endAt(1), endAt(2),
	})
	checkEvents(t, got, []string{"data 2", "barrier 1", "wm 5", "wm 7", "idle", "wm 9223372036854775807"})
}

// idleScript is one source subtask of TestIdleSubtaskDoesNotHoldExchange:
// with idle set it says so at once and speaks only after resume is
// closed; otherwise it sends rows and watermarks up to 200, then waits.
type idleScript struct {
	idle   bool
	resume <-chan struct{}
}

func (s *idleScript) Run(ctx context.Context, emit func(Message) error) error {
	send := func(ms ...Message) error {
		for _, m := range ms {
			if m.Kind == KindData {
				m.Batch = oneRow(memory.DefaultAllocator)
			}
			if err := emit(m); err != nil {
				return err
			}
		}
		return nil
	}
	if s.idle {
		if err := send(Message{Kind: KindIdle}); err != nil {
			return err
		}
		select {
		case <-s.resume:
		case <-ctx.Done():
			return ctx.Err()
		}
		return send(Message{Kind: KindActive}, Message{Kind: KindData}, Message{Kind: KindWatermark, Watermark: 300})
	}
	if err := send(Message{Kind: KindData}, Message{Kind: KindWatermark, Watermark: 100},
		Message{Kind: KindData}, Message{Kind: KindWatermark, Watermark: 200}); err != nil {
		return err
	}
	select {
	case <-s.resume:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// wmSpy is a keyed operator that records its watermarks and reports when
// it reaches 200.
type wmSpy struct {
	mu      sync.Mutex
	wms     []int64
	rows    int
	reached func()
}

func (w *wmSpy) KeyColumns() []int { return []int{0} }
func (w *wmSpy) Stateless()        {}
func (w *wmSpy) Process(b *vector.Batch, out Output) error {
	w.mu.Lock()
	w.rows += b.Len()
	w.mu.Unlock()
	return out.Emit(b)
}
func (w *wmSpy) OnWatermark(wm int64, out Output) error {
	w.mu.Lock()
	w.wms = append(w.wms, wm)
	w.mu.Unlock()
	if wm >= 200 {
		w.reached()
	}
	return out.EmitWatermark(wm)
}

// TestIdleSubtaskDoesNotHoldExchange: at parallelism 3, a source subtask
// that is idle from the start does not hold back the watermark of the
// keyed subtasks behind the exchange; when it speaks again its rows are
// counted and the watermark goes on from where it was.
func TestIdleSubtaskDoesNotHoldExchange(t *testing.T) {
	const p = 3
	resume := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(p)
	spies := make([]*wmSpy, p)
	copies := make([]*Pipeline, p)
	sinks := make([]*countSink, p)
	for i := range copies {
		var once sync.Once
		spies[i] = &wmSpy{reached: func() { once.Do(wg.Done) }}
		sinks[i] = &countSink{}
		copies[i] = &Pipeline{Source: &idleScript{idle: i == 2, resume: resume},
			Ops: []Operator{spies[i]}, Names: []string{"spy"}, Sink: sinks[i]}
	}
	pipes, err := Parallelize(copies, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{})
	go func() { wg.Wait(); close(reached) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := RunJob(ctx, pipes, nil); errc <- err }()
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		for i, s := range spies {
			s.mu.Lock()
			t.Errorf("keyed subtask %d: watermarks %v", i, s.wms)
			s.mu.Unlock()
		}
		cancel()
		<-errc
		t.Fatal("the idle source subtask held the watermark back")
	}
	close(resume)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	rows := 0
	for i, s := range spies {
		rows += s.rows
		if !slices.IsSorted(s.wms) || len(s.wms) == 0 || s.wms[len(s.wms)-1] != MaxWatermark {
			t.Errorf("keyed subtask %d: watermarks %v", i, s.wms)
		}
		for _, wm := range s.wms {
			if wm < MaxWatermark && wm > 200 && wm != 300 {
				t.Errorf("keyed subtask %d: watermark %d from nowhere: %v", i, wm, s.wms)
			}
		}
	}
	if rows != 5 {
		t.Errorf("keyed subtasks saw %d rows, want 5", rows)
	}
}
