package nexmark

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	gen "github.com/clink-dev/clink/connectors/nexmark"
)

// The hand-written loops: for each query, what a good engineer writes for
// exactly that query with Go maps and slices, fed the events of the tables
// it reads in stream order per table. Windows close as the watermark (max
// event time seen, minus Lag, the least over the tables read) passes their
// end, as the engine's do. Output rows are counted (as the blackhole sink
// counts them); with Collect they are also formatted as text (values
// joined by '|', in the query's column order), which the tests compare
// with the engine's output.

// Handler is one query's hand-written loop.
type Handler interface {
	Person(p *gen.Person)
	Auction(a *gen.Auction)
	Bid(b *gen.Bid)
	// Finish is the end of input: every open window fires.
	Finish()
}

// Out receives a hand loop's result.
type Out struct {
	Rows    int64
	Collect bool
	// Lines are the insert-only rows; Table the final rows of an updating
	// result by key.
	Lines []string
	Table map[string]string
}

func (o *Out) row(vals ...string) {
	o.Rows++
	if o.Collect {
		o.Lines = append(o.Lines, strings.Join(vals, "|"))
	}
}

func (o *Out) upsert(key string, vals ...string) {
	o.Rows++
	if o.Collect {
		if o.Table == nil {
			o.Table = map[string]string{}
		}
		o.Table[key] = strings.Join(vals, "|")
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// none ignores the tables a query does not read.
type none struct{}

func (none) Person(*gen.Person)   {}
func (none) Auction(*gen.Auction) {}
func (none) Bid(*gen.Bid)         {}
func (none) Finish()              {}

// watermarks is the least watermark over the tables a loop reads.
type watermarks struct {
	max [3]int64
	n   int
	use [3]bool
}

func newWatermarks(kinds ...gen.Kind) watermarks {
	w := watermarks{max: [3]int64{math.MinInt64, math.MinInt64, math.MinInt64}}
	for _, k := range kinds {
		w.use[k] = true
	}
	return w
}

// see records an event time of table k and returns the watermark.
func (w *watermarks) see(k gen.Kind, ts int64) int64 {
	w.max[k] = max(w.max[k], ts)
	wm := int64(math.MaxInt64)
	for i, u := range w.use {
		if u {
			wm = min(wm, w.max[i])
		}
	}
	if wm == math.MinInt64 {
		return wm
	}
	return wm - Lag
}

// floorDiv rounds down to a multiple of size (windows align to epoch 0).
func floorTo(ts, size int64) int64 { return ts - ((ts%size)+size)%size }

// q0: every bid.
type q0 struct {
	none
	out *Out
}

func newQ0(out *Out) Handler { return &q0{out: out} }

func (q *q0) Bid(b *gen.Bid) {
	if q.out.Collect {
		q.out.row(itoa(b.Auction), itoa(b.Bidder), itoa(b.Price), itoa(b.DateTime), string(b.Extra))
		return
	}
	q.out.Rows++
}

// q1: every bid, price * 0.908 with three decimals.
type q1 struct {
	none
	out *Out
}

func newQ1(out *Out) Handler { return &q1{out: out} }

func (q *q1) Bid(b *gen.Bid) {
	milli := b.Price * 908 // 0.908 * price, in thousandths
	if q.out.Collect {
		q.out.row(itoa(b.Auction), itoa(b.Bidder), itoa(milli/1000)+"."+strconv.FormatInt(1000+milli%1000, 10)[1:], itoa(b.DateTime), string(b.Extra))
		return
	}
	q.out.Rows++
}

// q2: bids on auctions whose id is a multiple of 123.
type q2 struct {
	none
	out *Out
}

func newQ2(out *Out) Handler { return &q2{out: out} }

func (q *q2) Bid(b *gen.Bid) {
	if b.Auction%123 == 0 {
		if q.out.Collect {
			q.out.row(itoa(b.Auction), itoa(b.Price))
		} else {
			q.out.Rows++
		}
	}
}

// q3: a symmetric hash join of auctions in category 10 with people in
// OR, ID or CA, on seller = id.
type q3 struct {
	none
	out      *Out
	people   map[int64]q3Person
	auctions map[int64][]int64 // seller -> auction ids without a partner yet seen
}

type q3Person struct{ name, city, state string }

func newQ3(out *Out) Handler {
	return &q3{out: out, people: map[int64]q3Person{}, auctions: map[int64][]int64{}}
}

func (q *q3) Person(p *gen.Person) {
	st := string(p.State)
	if st != "OR" && st != "ID" && st != "CA" {
		return
	}
	pp := q3Person{string(p.Name), string(p.City), st}
	q.people[p.ID] = pp
	for _, id := range q.auctions[p.ID] {
		if q.out.Collect {
			q.out.row(pp.name, pp.city, pp.state, itoa(id))
		} else {
			q.out.Rows++
		}
	}
}

func (q *q3) Auction(a *gen.Auction) {
	if a.Category != 10 {
		return
	}
	q.auctions[a.Seller] = append(q.auctions[a.Seller], a.ID)
	if p, ok := q.people[a.Seller]; ok {
		if q.out.Collect {
			q.out.row(p.name, p.city, p.state, itoa(a.ID))
		} else {
			q.out.Rows++
		}
	}
}

// q4: per category, the average (truncated, as Flink's AVG of a BIGINT)
// of the winning bids of its auctions, the winning bid being the highest
// between the auction's start and its expiry. Auctions wait in a map
// until the watermark passes their expiry; a bid read before its auction
// (the two topics are fetched independently, so bids may run ahead) waits
// until the watermark shows its auction cannot come any more. Each
// category keeps the sum and number of its auctions' winning bids: a new
// winning bid replaces its auction's old one in the sum.
type q4 struct {
	none
	out      *Out
	wm       watermarks
	auctions map[int64]*q4Auction
	order    []*q4Auction // by start, for eviction
	early    map[int64][]q4Bid
	earlyQ   []q4Early // early bids in arrival (event-time) order
	cats     map[int64]*q4Category
}

type q4Category struct{ sum, n int64 }

type q4Auction struct {
	id, cat, start, expires, best int64
	has                           bool
}

type q4Bid struct{ price, ts int64 }

type q4Early struct{ auction, ts int64 }

func newQ4(out *Out) Handler {
	return &q4{out: out, wm: newWatermarks(gen.KindAuction, gen.KindBid), auctions: map[int64]*q4Auction{}, early: map[int64][]q4Bid{}, cats: map[int64]*q4Category{}}
}

func (q *q4) Auction(a *gen.Auction) {
	x := &q4Auction{id: a.ID, cat: a.Category, start: a.DateTime, expires: a.Expires}
	q.auctions[a.ID] = x
	q.order = append(q.order, x)
	if bs, ok := q.early[a.ID]; ok {
		for _, b := range bs {
			q.apply(x, b.price, b.ts)
		}
		delete(q.early, a.ID)
	}
	q.evict(q.wm.see(gen.KindAuction, a.DateTime))
}

func (q *q4) Bid(b *gen.Bid) {
	if x, ok := q.auctions[b.Auction]; ok {
		q.apply(x, b.Price, b.DateTime)
	} else {
		q.early[b.Auction] = append(q.early[b.Auction], q4Bid{b.Price, b.DateTime})
		q.earlyQ = append(q.earlyQ, q4Early{b.Auction, b.DateTime})
	}
	q.evict(q.wm.see(gen.KindBid, b.DateTime))
}

func (q *q4) apply(x *q4Auction, price, ts int64) {
	if ts < x.start || ts > x.expires || ts > x.start+20000 {
		return
	}
	if x.has && price <= x.best {
		return
	}
	c := q.cats[x.cat]
	if c == nil {
		c = &q4Category{}
		q.cats[x.cat] = c
	}
	had, before := c.n > 0, int64(0)
	if had {
		before = c.sum / c.n
	}
	if x.has {
		c.sum += price - x.best
	} else {
		c.sum += price
		c.n++
	}
	x.best, x.has = price, true
	if avg := c.sum / c.n; !had || avg != before {
		if q.out.Collect {
			q.out.upsert(itoa(x.cat), itoa(x.cat), itoa(avg))
		} else {
			q.out.Rows++
		}
	}
}

// evict drops the auctions that no bid can join any more and the early
// bids whose auction can no longer come (auctions arrive in time order,
// none after a bid's time once the watermark passed it).
func (q *q4) evict(wm int64) {
	i := 0
	for ; i < len(q.order); i++ {
		x := q.order[i]
		if min(x.expires, x.start+20000) >= wm {
			break
		}
		delete(q.auctions, x.id)
	}
	q.order = q.order[i:]
	j := 0
	for ; j < len(q.earlyQ) && q.earlyQ[j].ts < wm; j++ {
		// The auction's oldest waiting bid, unless the auction came and
		// took its list (then the entry is stale).
		a := q.earlyQ[j].auction
		if l, ok := q.early[a]; ok {
			if len(l) <= 1 {
				delete(q.early, a)
			} else {
				q.early[a] = l[1:]
			}
		}
	}
	q.earlyQ = q.earlyQ[j:]
}

// q5: bids per auction per 10 s window sliding by 2 s; when a window
// closes, the auctions with the largest count.
type q5 struct {
	none
	out  *Out
	wm   watermarks
	wins map[int64]map[int64]int64 // window start -> auction -> count
	open []int64                   // window starts, ascending
}

func newQ5(out *Out) Handler {
	return &q5{out: out, wm: newWatermarks(gen.KindBid), wins: map[int64]map[int64]int64{}}
}

func (q *q5) Bid(b *gen.Bid) {
	last := floorTo(b.DateTime, 2000)
	for s := last; s > b.DateTime-10000; s -= 2000 {
		w := q.wins[s]
		if w == nil {
			w = map[int64]int64{}
			q.wins[s] = w
			i, _ := slices.BinarySearch(q.open, s)
			q.open = slices.Insert(q.open, i, s)
		}
		w[b.Auction]++
	}
	q.fire(q.wm.see(gen.KindBid, b.DateTime))
}

func (q *q5) fire(wm int64) {
	for len(q.open) > 0 && q.open[0]+10000 <= wm {
		s := q.open[0]
		q.open = q.open[1:]
		w := q.wins[s]
		delete(q.wins, s)
		var best int64
		for _, n := range w {
			best = max(best, n)
		}
		for a, n := range w {
			if n == best {
				if q.out.Collect {
					q.out.row(itoa(a), itoa(n))
				} else {
					q.out.Rows++
				}
			}
		}
	}
}

func (q *q5) Finish() { q.fire(math.MaxInt64) }

// q7: per 10 s window the highest price; the bids of the window (and
// those at exactly its end) at that price.
type q7 struct {
	none
	out  *Out
	wm   watermarks
	wins map[int64]*q7Window // by window start
	open []int64
}

type q7Window struct {
	max  int64
	top  []gen.Bid // the window's bids at max so far (strings copied)
	edge []gen.Bid // bids at exactly the window's start
}

func newQ7(out *Out) Handler {
	return &q7{out: out, wm: newWatermarks(gen.KindBid), wins: map[int64]*q7Window{}}
}

func (q *q7) window(s int64) *q7Window {
	w := q.wins[s]
	if w == nil {
		w = &q7Window{max: math.MinInt64}
		q.wins[s] = w
		i, _ := slices.BinarySearch(q.open, s)
		q.open = slices.Insert(q.open, i, s)
	}
	return w
}

func keep(b *gen.Bid) gen.Bid {
	c := *b
	c.Extra = slices.Clone(b.Extra)
	c.Channel, c.URL = nil, nil
	return c
}

func (q *q7) Bid(b *gen.Bid) {
	s := floorTo(b.DateTime, 10000)
	w := q.window(s)
	switch {
	case b.Price > w.max:
		w.max = b.Price
		w.top = append(w.top[:0], keep(b))
	case b.Price == w.max:
		w.top = append(w.top, keep(b))
	}
	if b.DateTime == s {
		w.edge = append(w.edge, keep(b))
	}
	q.fire(q.wm.see(gen.KindBid, b.DateTime))
}

// fire closes windows whose end (and the bids at it) the watermark passed.
func (q *q7) fire(wm int64) {
	for len(q.open) > 0 && q.open[0]+10000 <= wm {
		s := q.open[0]
		q.open = q.open[1:]
		w := q.wins[s]
		delete(q.wins, s)
		for i := range w.top {
			q.emit(&w.top[i])
		}
		if next := q.wins[s+10000]; next != nil {
			for i := range next.edge {
				if next.edge[i].Price == w.max {
					q.emit(&next.edge[i])
				}
			}
		}
	}
}

func (q *q7) emit(b *gen.Bid) {
	if q.out.Collect {
		q.out.row(itoa(b.Auction), itoa(b.Price), itoa(b.Bidder), itoa(b.DateTime), string(b.Extra))
	} else {
		q.out.Rows++
	}
}

func (q *q7) Finish() { q.fire(math.MaxInt64) }

// q8: per 10 s window, the new people and the sellers; at the window's
// close the people who are also sellers.
type q8 struct {
	none
	out  *Out
	wm   watermarks
	wins map[int64]*q8Window
	open []int64
}

type q8Window struct {
	people  map[int64]string
	sellers map[int64]bool
}

func newQ8(out *Out) Handler {
	return &q8{out: out, wm: newWatermarks(gen.KindPerson, gen.KindAuction), wins: map[int64]*q8Window{}}
}

func (q *q8) window(ts int64) *q8Window {
	s := floorTo(ts, 10000)
	w := q.wins[s]
	if w == nil {
		w = &q8Window{people: map[int64]string{}, sellers: map[int64]bool{}}
		q.wins[s] = w
		i, _ := slices.BinarySearch(q.open, s)
		q.open = slices.Insert(q.open, i, s)
	}
	return w
}

func (q *q8) Person(p *gen.Person) {
	q.window(p.DateTime).people[p.ID] = string(p.Name)
	q.fire(q.wm.see(gen.KindPerson, p.DateTime))
}

func (q *q8) Auction(a *gen.Auction) {
	q.window(a.DateTime).sellers[a.Seller] = true
	q.fire(q.wm.see(gen.KindAuction, a.DateTime))
}

func (q *q8) fire(wm int64) {
	for len(q.open) > 0 && q.open[0]+10000 <= wm {
		s := q.open[0]
		q.open = q.open[1:]
		w := q.wins[s]
		delete(q.wins, s)
		for id, name := range w.people {
			if w.sellers[id] {
				if q.out.Collect {
					q.out.row(itoa(id), name, itoa(s))
				} else {
					q.out.Rows++
				}
			}
		}
	}
}

func (q *q8) Finish() { q.fire(math.MaxInt64) }

// q11: per bidder the current session; a bid 10 s or more after the
// session's last bid starts a new one. Sessions close as the watermark
// passes their last bid + 10 s: the open sessions are swept whenever the
// watermark has advanced by 100 ms.
type q11 struct {
	none
	out      *Out
	wm       watermarks
	sessions map[int64]*q11Session
	swept    int64
}

type q11Session struct{ start, last, n int64 }

func newQ11(out *Out) Handler {
	return &q11{out: out, wm: newWatermarks(gen.KindBid), sessions: map[int64]*q11Session{}, swept: math.MinInt64}
}

func (q *q11) Bid(b *gen.Bid) {
	s := q.sessions[b.Bidder]
	switch {
	case s == nil:
		q.sessions[b.Bidder] = &q11Session{start: b.DateTime, last: b.DateTime, n: 1}
	case b.DateTime < s.last+10000:
		s.n++
		s.last = max(s.last, b.DateTime)
	default:
		q.emit(b.Bidder, s)
		*s = q11Session{start: b.DateTime, last: b.DateTime, n: 1}
	}
	if wm := q.wm.see(gen.KindBid, b.DateTime); wm >= q.swept+100 {
		q.sweep(wm)
	}
}

func (q *q11) emit(bidder int64, s *q11Session) {
	if q.out.Collect {
		q.out.row(itoa(bidder), itoa(s.n), itoa(s.start), itoa(s.last+10000))
	} else {
		q.out.Rows++
	}
}

func (q *q11) sweep(wm int64) {
	q.swept = wm
	for bidder, s := range q.sessions {
		if s.last+10000 <= wm {
			q.emit(bidder, s)
			delete(q.sessions, bidder)
		}
	}
}

func (q *q11) Finish() { q.sweep(math.MaxInt64) }

// q12: bids per bidder per 10 s tumbling window.
type q12 struct {
	none
	out  *Out
	wm   watermarks
	wins map[int64]map[int64]int64
	open []int64
}

func newQ12(out *Out) Handler {
	return &q12{out: out, wm: newWatermarks(gen.KindBid), wins: map[int64]map[int64]int64{}}
}

func (q *q12) Bid(b *gen.Bid) {
	s := floorTo(b.DateTime, 10000)
	w := q.wins[s]
	if w == nil {
		w = map[int64]int64{}
		q.wins[s] = w
		i, _ := slices.BinarySearch(q.open, s)
		q.open = slices.Insert(q.open, i, s)
	}
	w[b.Bidder]++
	q.fire(q.wm.see(gen.KindBid, b.DateTime))
}

func (q *q12) fire(wm int64) {
	for len(q.open) > 0 && q.open[0]+10000 <= wm {
		s := q.open[0]
		q.open = q.open[1:]
		for bidder, n := range q.wins[s] {
			if q.out.Collect {
				q.out.row(itoa(bidder), itoa(n), itoa(s), itoa(s+10000))
			} else {
				q.out.Rows++
			}
		}
		delete(q.wins, s)
	}
}

func (q *q12) Finish() { q.fire(math.MaxInt64) }

// q14: converted prices in a range, the bid's time of day, and the count
// of 'c' in its extra field.
type q14 struct {
	none
	out *Out
}

func newQ14(out *Out) Handler { return &q14{out: out} }

func (q *q14) Bid(b *gen.Bid) {
	milli := b.Price * 908
	if milli <= 1_000_000_000 || milli >= 50_000_000_000 {
		return
	}
	kind := "otherTime"
	switch h := (b.DateTime / 3_600_000) % 24; {
	case h >= 8 && h <= 18:
		kind = "dayTime"
	case h <= 6 || h >= 20:
		kind = "nightTime"
	}
	c := int64(bytes.Count(b.Extra, []byte{'c'}))
	if q.out.Collect {
		q.out.row(itoa(b.Auction), itoa(b.Bidder), itoa(milli/1000)+"."+strconv.FormatInt(1000+milli%1000, 10)[1:], kind, itoa(b.DateTime), string(b.Extra), itoa(c))
		return
	}
	q.out.Rows++
}

// q22: the first three directories of each bid's URL.
type q22 struct {
	none
	out *Out
}

func newQ22(out *Out) Handler { return &q22{out: out} }

func (q *q22) Bid(b *gen.Bid) {
	// Parts 3, 4 and 5 (0-based) of the URL split by '/'.
	var dirs [3][]byte
	rest := b.URL
	for part := 0; part <= 5; part++ {
		i := bytes.IndexByte(rest, '/')
		cur := rest
		if i >= 0 {
			cur, rest = rest[:i], rest[i+1:]
		} else {
			rest = rest[len(rest):]
		}
		if part >= 3 {
			dirs[part-3] = cur
		}
		if i < 0 {
			break
		}
	}
	if q.out.Collect {
		q.out.row(itoa(b.Auction), itoa(b.Bidder), itoa(b.Price), string(b.Channel), string(dirs[0]), string(dirs[1]), string(dirs[2]))
		return
	}
	q.out.Rows++
}

// storedBid is a bid kept across records (its strings copied).
type storedBid struct {
	auction, bidder, price, dateTime int64
	channel, url, extra              string
}

func store(b *gen.Bid) storedBid {
	return storedBid{b.Auction, b.Bidder, b.Price, b.DateTime, string(b.Channel), string(b.URL), string(b.Extra)}
}

func (s *storedBid) vals() []string {
	return []string{itoa(s.auction), itoa(s.bidder), itoa(s.price), s.channel, s.url, itoa(s.dateTime), s.extra}
}

// q18: the latest bid per (bidder, auction); a bid of the same
// millisecond as the kept one does not replace it.
type q18 struct {
	none
	out  *Out
	last map[[2]int64]*storedBid
}

func newQ18(out *Out) Handler { return &q18{out: out, last: map[[2]int64]*storedBid{}} }

func (q *q18) Bid(b *gen.Bid) {
	k := [2]int64{b.Auction, b.Bidder}
	cur := q.last[k]
	switch {
	case cur == nil:
		s := store(b)
		q.last[k] = &s
		cur = &s
	case b.DateTime > cur.dateTime:
		*cur = store(b)
	default:
		return
	}
	if q.out.Collect {
		q.out.upsert(itoa(b.Auction)+"|"+itoa(b.Bidder), cur.vals()...)
	} else {
		q.out.Rows++
	}
}

// q19: the 10 highest bids per auction, equal prices in arrival order.
type q19 struct {
	none
	out *Out
	top map[int64][]storedBid
}

func newQ19(out *Out) Handler { return &q19{out: out, top: map[int64][]storedBid{}} }

func (q *q19) Bid(b *gen.Bid) {
	l := q.top[b.Auction]
	i := len(l)
	for i > 0 && l[i-1].price < b.Price {
		i--
	}
	if i >= 10 {
		return
	}
	l = slices.Insert(l, i, store(b))
	if len(l) > 10 {
		l = l[:10]
	}
	q.top[b.Auction] = l
	// Every rank from i down changed.
	for r := i; r < len(l); r++ {
		if q.out.Collect {
			q.out.upsert(itoa(b.Auction)+"|"+itoa(int64(r+1)), append(l[r].vals(), itoa(int64(r+1)))...)
		} else {
			q.out.Rows++
		}
	}
}
