package sql

import (
	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/clink-dev/clink/substrait"
)

var joinTypes = map[JoinKind]pb.JoinRel_JoinType{
	JoinInner: pb.JoinRel_JOIN_TYPE_INNER,
	JoinLeft:  pb.JoinRel_JOIN_TYPE_LEFT,
	JoinRight: pb.JoinRel_JOIN_TYPE_RIGHT,
	JoinFull:  pb.JoinRel_JOIN_TYPE_OUTER,
}

// join binds a JOIN in FROM. Equi-joins run as regular joins (updating
// output for outer joins); a condition that also bounds one side's event
// time against the other's (a.ts BETWEEN b.ts - INTERVAL ... AND b.ts +
// INTERVAL ...) makes an interval join with watermark-driven state.
func (b *binder) join(x *Join) (*pb.Rel, *scope, error) {
	jt, ok := joinTypes[x.Kind]
	if !ok {
		return nil, nil, b.errf(x.OpPos, "cross joins are not supported: join with ... JOIN ... ON an equality between the two sides")
	}
	if x.Using != nil {
		return nil, nil, b.errf(x.OpPos, "JOIN ... USING is not supported yet: write ON a.col = b.col")
	}
	lrel, lsc, err := b.from(x.Left)
	if err != nil {
		return nil, nil, err
	}
	rrel, rsc, err := b.from(x.Right)
	if err != nil {
		return nil, nil, err
	}
	if lsc.updating || rsc.updating {
		return nil, nil, b.errf(x.OpPos, "joins over an updating (changelog) input are not supported")
	}
	sc := &scope{unbounded: lsc.unbounded || rsc.unbounded}
	sc.cols = append(append(sc.cols, lsc.cols...), rsc.cols...)
	for i := range sc.cols {
		sc.cols[i].window = false
	}
	cond, err := b.expr(x.On, sc)
	if err != nil {
		return nil, nil, err
	}
	if cond.typ.ID() != arrow.BOOL {
		return nil, nil, b.errf(x.On.Position(), "JOIN ON needs a BOOLEAN condition")
	}
	nl := len(lsc.cols)
	if !b.hasEquiKey(x.On, sc, nl) {
		return nil, nil, b.errf(x.On.Position(), "JOIN ON needs an equality between a column of each side (of the same type)")
	}
	jrel := &pb.JoinRel{Common: substrait.Direct(), Left: lrel, Right: rrel, Expression: cond.pb, Type: jt}
	iv, err := b.intervalBounds(x.On, sc, nl)
	if err != nil {
		return nil, nil, err
	}
	if iv != nil {
		st, err := structpb.NewStruct(map[string]any{"clink_interval_join": map[string]any{
			"left_time": iv.left, "right_time": iv.right - nl, "lower": iv.lower, "upper": iv.upper,
		}})
		if err != nil {
			return nil, nil, err
		}
		a, err := substrait.PackAny(st)
		if err != nil {
			return nil, nil, err
		}
		jrel.AdvancedExtension = &ext.AdvancedExtension{Enhancement: a}
	} else {
		if sc.unbounded && !b.unboundedState {
			return nil, nil, b.errf(x.OpPos, "a regular join over an unbounded source keeps every row forever: bound the join in event time (a.ts BETWEEN b.ts - INTERVAL ... AND b.ts + INTERVAL ...), or accept unbounded state with SET 'table.exec.state.ttl' = '0'")
		}
		sc.updating = x.Kind != JoinInner
	}
	// Time attributes do not survive a join: windows over a join's output
	// are not supported yet.
	for i := range sc.cols {
		sc.cols[i].eventTime = false
	}
	return &pb.Rel{RelType: &pb.Rel_Join{Join: jrel}}, sc, nil
}

// conjunctsOf splits a condition on AND.
func conjunctsOf(e Expr) []Expr {
	if be, ok := e.(*BinaryExpr); ok && be.Op == OpAnd {
		return append(conjunctsOf(be.Left), conjunctsOf(be.Right)...)
	}
	return []Expr{e}
}

// sideOf resolves a plain column reference to its index in sc.
func (b *binder) sideOf(e Expr, sc *scope) (int, bool) {
	cr, ok := e.(*ColumnRef)
	if !ok {
		return 0, false
	}
	idx, err := b.resolve(cr, sc)
	return idx, err == nil
}

func (b *binder) hasEquiKey(on Expr, sc *scope, nl int) bool {
	for _, c := range conjunctsOf(on) {
		be, ok := c.(*BinaryExpr)
		if !ok || be.Op != OpEq {
			continue
		}
		l, ok1 := b.sideOf(be.Left, sc)
		r, ok2 := b.sideOf(be.Right, sc)
		if ok1 && ok2 && (l < nl) != (r < nl) && arrow.TypeEqual(sc.cols[l].typ, sc.cols[r].typ) {
			return true
		}
	}
	return false
}

type intervalBound struct {
	left, right    int
	lower, upper   int64
	haveLo, haveHi bool
}

// timeOffset reads `col`, `col + INTERVAL` or `col - INTERVAL` where col is
// an event-time column; it returns the column and the offset in ms.
func (b *binder) timeOffset(e Expr, sc *scope) (int, int64, bool) {
	if idx, ok := b.sideOf(e, sc); ok && sc.cols[idx].eventTime {
		return idx, 0, true
	}
	be, ok := e.(*BinaryExpr)
	if !ok || (be.Op != OpAdd && be.Op != OpSub) {
		return 0, 0, false
	}
	idx, ok := b.sideOf(be.Left, sc)
	if !ok || !sc.cols[idx].eventTime {
		return 0, 0, false
	}
	ms, err := b.durationMS(be.Right)
	if err != nil {
		return 0, 0, false
	}
	if be.Op == OpSub {
		ms = -ms
	}
	return idx, ms, true
}

// intervalBounds finds lower and upper bounds of one side's event time
// relative to the other's among the ON conjuncts.
func (b *binder) intervalBounds(on Expr, sc *scope, nl int) (*intervalBound, error) {
	var iv *intervalBound
	// add records x >= y + off (ge) or x <= y + off (le) for time columns.
	add := func(x int, y int, off int64, ge bool, pos Pos) error {
		if (x < nl) == (y < nl) {
			return nil
		}
		// Normalize to left >= right + lower / left <= right + upper.
		if x >= nl {
			x, y, off, ge = y, x, -off, !ge
		}
		if iv == nil {
			iv = &intervalBound{left: x, right: y}
		}
		if iv.left != x || iv.right != y {
			return b.errf(pos, "an interval join bounds one pair of time columns")
		}
		if ge {
			iv.lower, iv.haveLo = off, true
		} else {
			iv.upper, iv.haveHi = off, true
		}
		return nil
	}
	for _, c := range conjunctsOf(on) {
		switch x := c.(type) {
		case *BetweenExpr:
			if x.Not {
				continue
			}
			xi, xo, ok := b.timeOffset(x.X, sc)
			li, lo, ok1 := b.timeOffset(x.Low, sc)
			hi, ho, ok2 := b.timeOffset(x.High, sc)
			if !ok || !ok1 || !ok2 || li != hi {
				continue
			}
			if err := add(xi, li, lo-xo, true, x.OpPos); err != nil {
				return nil, err
			}
			if err := add(xi, hi, ho-xo, false, x.OpPos); err != nil {
				return nil, err
			}
		case *BinaryExpr:
			if x.Op == OpEq {
				// Equal event times (a window join on window_end): an
				// interval of zero width.
				xi, xo, ok1 := b.timeOffset(x.Left, sc)
				yi, yo, ok2 := b.timeOffset(x.Right, sc)
				if ok1 && ok2 {
					if err := add(xi, yi, yo-xo, true, x.OpPos); err != nil {
						return nil, err
					}
					if err := add(xi, yi, yo-xo, false, x.OpPos); err != nil {
						return nil, err
					}
				}
				continue
			}
			var ge, strict bool
			switch x.Op {
			case OpGe:
				ge = true
			case OpGt:
				ge, strict = true, true
			case OpLe:
			case OpLt:
				strict = true
			default:
				continue
			}
			xi, xo, ok1 := b.timeOffset(x.Left, sc)
			yi, yo, ok2 := b.timeOffset(x.Right, sc)
			if !ok1 || !ok2 {
				continue
			}
			off := yo - xo
			if strict {
				if ge {
					off++
				} else {
					off--
				}
			}
			if err := add(xi, yi, off, ge, x.OpPos); err != nil {
				return nil, err
			}
		}
	}
	if iv == nil {
		return nil, nil
	}
	if !iv.haveLo || !iv.haveHi {
		return nil, b.errf(on.Position(), "an interval join needs both a lower and an upper bound on the time columns (a.ts BETWEEN b.ts - INTERVAL ... AND b.ts + INTERVAL ...)")
	}
	if iv.lower > iv.upper {
		return nil, b.errf(on.Position(), "the interval join's lower bound is above its upper bound")
	}
	return iv, nil
}
