package nexmark

import (
	"bytes"
	"strconv"
	"time"

	gen "github.com/clink-dev/clink/connectors/nexmark"
)

// The hand-written loops of the daily statistics (q15, q16, q17) and of
// q21 (channel ids). The statistics are updating results: every bid
// changes its group's counts, so every bid upserts its group's row.

const msPerDay = 86_400_000

// dayOf is the UTC day number of an epoch-ms time.
func dayOf(ms int64) int64 {
	d := ms / msPerDay
	if ms%msPerDay < 0 {
		d--
	}
	return d
}

// dayText is a day number as yyyy-MM-dd.
func dayText(day int64) string { return time.UnixMilli(day * msPerDay).UTC().Format("2006-01-02") }

// priceRank is the price range a bid falls in: 0 below 10 000, 1 below
// 1 000 000, 2 above.
func priceRank(price int64) int {
	switch {
	case price < 10_000:
		return 0
	case price < 1_000_000:
		return 1
	}
	return 2
}

// dailyStats are q15's and q16's counts of one group: bids, and distinct
// bidders and auctions, in all and per price range.
type dailyStats struct {
	bids, rankBids           [3]int64
	total                    int64
	bidders, auctions        map[int64]struct{}
	rankBidders, rankAuction [3]map[int64]struct{}
}

func newDailyStats() *dailyStats {
	s := &dailyStats{bidders: map[int64]struct{}{}, auctions: map[int64]struct{}{}}
	for r := range s.rankBidders {
		s.rankBidders[r] = map[int64]struct{}{}
		s.rankAuction[r] = map[int64]struct{}{}
	}
	return s
}

func (s *dailyStats) add(b *gen.Bid) {
	r := priceRank(b.Price)
	s.total++
	s.rankBids[r]++
	s.bidders[b.Bidder] = struct{}{}
	s.auctions[b.Auction] = struct{}{}
	s.rankBidders[r][b.Bidder] = struct{}{}
	s.rankAuction[r][b.Auction] = struct{}{}
}

// vals are the twelve statistics columns in the queries' order.
func (s *dailyStats) vals() []string {
	out := []string{itoa(s.total)}
	for r := range 3 {
		out = append(out, itoa(s.rankBids[r]))
	}
	out = append(out, itoa(int64(len(s.bidders))))
	for r := range 3 {
		out = append(out, itoa(int64(len(s.rankBidders[r]))))
	}
	out = append(out, itoa(int64(len(s.auctions))))
	for r := range 3 {
		out = append(out, itoa(int64(len(s.rankAuction[r]))))
	}
	return out
}

// q15: per day, the statistics of all bids.
type q15 struct {
	none
	out  *Out
	days map[int64]*q15Day
}

type q15Day struct {
	text  string
	stats *dailyStats
}

func newQ15(out *Out) Handler { return &q15{out: out, days: map[int64]*q15Day{}} }

func (q *q15) Bid(b *gen.Bid) {
	day := dayOf(b.DateTime)
	d := q.days[day]
	if d == nil {
		d = &q15Day{text: dayText(day), stats: newDailyStats()}
		q.days[day] = d
	}
	d.stats.add(b)
	if q.out.Collect {
		q.out.upsert(d.text, append([]string{d.text}, d.stats.vals()...)...)
		return
	}
	q.out.Rows++
}

// q16: per channel and day, the statistics and the last minute of the
// day ("HH:mm") that saw a bid.
type q16 struct {
	none
	out  *Out
	days map[int64]map[string]*q16Group
}

type q16Group struct {
	channel, day string
	minute       int64 // minute of the day, the largest seen
	stats        *dailyStats
}

func newQ16(out *Out) Handler { return &q16{out: out, days: map[int64]map[string]*q16Group{}} }

func (q *q16) Bid(b *gen.Bid) {
	day := dayOf(b.DateTime)
	channels := q.days[day]
	if channels == nil {
		channels = map[string]*q16Group{}
		q.days[day] = channels
	}
	g := channels[string(b.Channel)]
	if g == nil {
		g = &q16Group{channel: string(b.Channel), day: dayText(day), minute: -1, stats: newDailyStats()}
		channels[g.channel] = g
	}
	g.minute = max(g.minute, (b.DateTime-day*msPerDay)/60_000)
	g.stats.add(b)
	if q.out.Collect {
		minute := strconv.FormatInt(100+g.minute/60, 10)[1:] + ":" + strconv.FormatInt(100+g.minute%60, 10)[1:]
		q.out.upsert(g.channel+"|"+g.day, append([]string{g.channel, g.day, minute}, g.stats.vals()...)...)
		return
	}
	q.out.Rows++
}

// q17: per auction and day, the bids in all and per price range, and the
// lowest, highest, average (truncated) and total price.
type q17 struct {
	none
	out    *Out
	groups map[[2]int64]*q17Group
	days   map[int64]string
}

type q17Group struct {
	bids, sum, lo, hi int64
	rankBids          [3]int64
}

func newQ17(out *Out) Handler {
	return &q17{out: out, groups: map[[2]int64]*q17Group{}, days: map[int64]string{}}
}

func (q *q17) Bid(b *gen.Bid) {
	day := dayOf(b.DateTime)
	k := [2]int64{b.Auction, day}
	g := q.groups[k]
	if g == nil {
		g = &q17Group{lo: b.Price, hi: b.Price}
		q.groups[k] = g
	}
	g.bids++
	g.sum += b.Price
	g.lo, g.hi = min(g.lo, b.Price), max(g.hi, b.Price)
	g.rankBids[priceRank(b.Price)]++
	if q.out.Collect {
		text, ok := q.days[day]
		if !ok {
			text = dayText(day)
			q.days[day] = text
		}
		q.out.upsert(itoa(b.Auction)+"|"+text, itoa(b.Auction), text, itoa(g.bids),
			itoa(g.rankBids[0]), itoa(g.rankBids[1]), itoa(g.rankBids[2]),
			itoa(g.lo), itoa(g.hi), itoa(g.sum/g.bids), itoa(g.sum))
		return
	}
	q.out.Rows++
}

// q21: the big channels' bids with their id, the others' with the
// channel_id of their URL; bids with neither are left out.
type q21 struct {
	none
	out *Out
}

func newQ21(out *Out) Handler { return &q21{out: out} }

var (
	q21Channels = [][]byte{[]byte("apple"), []byte("google"), []byte("facebook"), []byte("baidu")}
	q21IDs      = []string{"0", "1", "2", "3"}
	q21Param    = []byte("channel_id=")
)

// channelID is the value of the first channel_id parameter of a URL that
// starts it or follows an '&' (the regex (&|^)channel_id=([^&]*)).
func channelID(url []byte) ([]byte, bool) {
	for from := 0; ; {
		i := bytes.Index(url[from:], q21Param)
		if i < 0 {
			return nil, false
		}
		i += from
		if i == 0 || url[i-1] == '&' {
			v := url[i+len(q21Param):]
			if j := bytes.IndexByte(v, '&'); j >= 0 {
				v = v[:j]
			}
			return v, true
		}
		from = i + 1
	}
}

func (q *q21) Bid(b *gen.Bid) {
	big := -1
	for k, c := range q21Channels {
		if bytes.EqualFold(b.Channel, c) {
			big = k
			break
		}
	}
	id, ok := channelID(b.URL)
	if !ok && big < 0 {
		return
	}
	if !q.out.Collect {
		q.out.Rows++
		return
	}
	text := string(id)
	if big >= 0 {
		text = q21IDs[big]
	}
	q.out.row(itoa(b.Auction), itoa(b.Bidder), itoa(b.Price), string(b.Channel), text)
}
