package nexmark

import (
	"math"
	"math/bits"
	"strconv"
	"sync"
)

// The stream follows the standard Nexmark generator (Beam's and Flink's
// nexmark GeneratorConfig): of every 50 events (an epoch), event 0 is a
// person, events 1-3 are auctions and events 4-49 are bids. Ids, hot
// auctions, sellers and bidders, prices, categories, auction lengths and
// the padding of each record to an average size are those of the standard
// generator. Every event is drawn from its own random stream seeded by
// (seed, event index), so any event can be generated on its own: subtasks
// generate disjoint parts of one stream and a restore resumes anywhere.
//
// Two deliberate differences: the standard generator lets a new bid or
// auction name a person or auction up to 10 ids ahead of the newest one
// (PERSON_ID_LEAD, AUCTION_ID_LEAD); here every id names a person or
// auction that already exists in the stream (lead 0, and a hot bidder is
// at most the newest person), so the three tables are consistent.
// Strings are slices of a fixed random text rather than drawn character
// by character, which keeps the generator free of per-row allocation.
const (
	// EpochEvents is the number of events of one epoch.
	EpochEvents = 50
	// PersonsPerEpoch, AuctionsPerEpoch and BidsPerEpoch are the
	// proportions 1 : 3 : 46.
	PersonsPerEpoch  = 1
	AuctionsPerEpoch = 3
	BidsPerEpoch     = 46

	// FirstPersonID, FirstAuctionID and FirstCategoryID are the first ids.
	FirstPersonID   = 1000
	FirstAuctionID  = 1000
	FirstCategoryID = 10
	// Categories is the number of auction categories.
	Categories = 5

	numActivePeople     = 1000
	numInFlightAuctions = 100
	hotAuctionRatio     = 2 // 1 - 1/2 of bids are for a hot auction
	hotSellersRatio     = 4 // 1 - 1/4 of auctions are by a hot seller
	hotBiddersRatio     = 4 // 1 - 1/4 of bids are by a hot bidder
	hotGroup            = 100
	hotChannelsRatio    = 2 // 1 - 1/2 of bids come through a hot channel
	channelsNumber      = 10000
	avgPersonBytes      = 200
	avgAuctionBytes     = 500
	avgBidBytes         = 100

	// DefaultBaseTime is the event time of event 0 (2026-01-01 00:00:00
	// UTC) unless base_time_ms says otherwise.
	DefaultBaseTime = 1767225600000
	// DefaultRate is the default event-time rate: 100 000 events per
	// second of event time, so a 10 s window holds 1 M events.
	DefaultRate = 100000
)

// Kind is the kind of an event, and the table it belongs to.
type Kind uint8

const (
	KindPerson Kind = iota
	KindAuction
	KindBid
)

// Kinds are the tables in the order of their names.
var Kinds = []Kind{KindPerson, KindAuction, KindBid}

func (k Kind) String() string {
	switch k {
	case KindPerson:
		return "person"
	case KindAuction:
		return "auction"
	}
	return "bid"
}

// ParseKind reads a table name.
func ParseKind(s string) (Kind, bool) {
	for _, k := range Kinds {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// KindOf returns the kind of event e.
func KindOf(e int64) Kind {
	switch r := e % EpochEvents; {
	case r < PersonsPerEpoch:
		return KindPerson
	case r < PersonsPerEpoch+AuctionsPerEpoch:
		return KindAuction
	}
	return KindBid
}

// NextOfKind returns the first event index >= e of kind k.
func NextOfKind(e int64, k Kind) int64 {
	r := e % EpochEvents
	switch k {
	case KindPerson:
		if r == 0 {
			return e
		}
		return e + EpochEvents - r
	case KindAuction:
		switch {
		case r < 1:
			return e + 1
		case r < 4:
			return e
		}
		return e + EpochEvents - r + 1
	}
	if r < 4 {
		return e + 4 - r
	}
	return e
}

// CountOfKind returns how many of the events [0, n) are of kind k.
func CountOfKind(n int64, k Kind) int64 {
	full, r := n/EpochEvents, n%EpochEvents
	switch k {
	case KindPerson:
		return full + min(r, 1)
	case KindAuction:
		return full*AuctionsPerEpoch + max(min(r, 4)-1, 0)
	}
	return full*BidsPerEpoch + max(r-4, 0)
}

// Config defines one stream.
type Config struct {
	Seed int64
	// Rate is the event-time rate in events per second: event e happens at
	// BaseTime + e*1000/Rate ms.
	Rate     int64
	BaseTime int64
}

// DefaultConfig is the stream of the default options.
func DefaultConfig() Config { return Config{Rate: DefaultRate, BaseTime: DefaultBaseTime} }

// Time is event e's event time in epoch ms.
func (c Config) Time(e int64) int64 { return c.BaseTime + e*1000/c.Rate }

// PersonID is the id of the person of event e (e must be a person).
func PersonID(e int64) int64 { return lastPerson(e) + FirstPersonID }

// AuctionID is the id of the auction of event e (e must be an auction).
func AuctionID(e int64) int64 { return lastAuction(e) + FirstAuctionID }

// lastPerson is the base-0 id of the newest person at event e.
func lastPerson(e int64) int64 { return e / EpochEvents }

// lastAuction is the base-0 id of the newest auction at event e (-1 before
// the first).
func lastAuction(e int64) int64 {
	epoch, off := e/EpochEvents, e%EpochEvents
	switch {
	case off < PersonsPerEpoch:
		epoch--
		off = AuctionsPerEpoch - 1
	case off >= PersonsPerEpoch+AuctionsPerEpoch:
		off = AuctionsPerEpoch - 1
	default:
		off -= PersonsPerEpoch
	}
	return epoch*AuctionsPerEpoch + off
}

// Person is one person event. Byte fields point into the generator's
// tables or scratch space: valid until its next call.
type Person struct {
	ID                                          int64
	Name, Email, CreditCard, City, State, Extra []byte
	DateTime                                    int64
}

// Auction is one auction event.
type Auction struct {
	ID                    int64
	ItemName, Description []byte
	InitialBid, Reserve   int64
	DateTime, Expires     int64
	Seller, Category      int64
	Extra                 []byte
}

// Bid is one bid event.
type Bid struct {
	Auction, Bidder, Price int64
	Channel, URL           []byte
	DateTime               int64
	Extra                  []byte
}

// Generator draws events. Not safe for concurrent use; cheap to create.
type Generator struct {
	cfg   Config
	seed  uint64
	email [7 + 1 + 5 + 4]byte
	card  [19]byte
}

// NewGenerator returns a generator of the stream cfg.
func NewGenerator(cfg Config) *Generator {
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	return &Generator{cfg: cfg, seed: mix64(uint64(cfg.Seed) ^ 0x6e65786d61726b)}
}

// Config returns the generator's stream definition.
func (g *Generator) Config() Config { return g.cfg }

func (g *Generator) rng(e int64) rng { return rng{s: g.seed ^ uint64(e)*0xd1b54a32d192ed03} }

// Person generates event e as a person.
func (g *Generator) Person(e int64, p *Person) {
	t := loadTables()
	r := g.rng(e)
	p.ID = PersonID(e)
	p.DateTime = g.cfg.Time(e)
	p.Name = t.names[r.intn(int64(len(t.names)))]
	r.letters(g.email[0:7])
	g.email[7] = '@'
	r.letters(g.email[8:13])
	copy(g.email[13:], ".com")
	p.Email = g.email[:]
	for i := 0; i < 4; i++ {
		v := r.intn(10000)
		c := g.card[i*5 : i*5+4]
		c[0], c[1], c[2], c[3] = byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10)
		if i < 3 {
			g.card[i*5+4] = ' '
		}
	}
	p.CreditCard = g.card[:]
	p.City = t.cities[r.intn(int64(len(t.cities)))]
	p.State = t.states[r.intn(int64(len(t.states)))]
	size := 8 + len(p.Name) + len(p.Email) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = r.extra(t.text, size, avgPersonBytes)
}

// Auction generates event e as an auction.
func (g *Generator) Auction(e int64, a *Auction) {
	t := loadTables()
	r := g.rng(e)
	a.ID = AuctionID(e)
	a.DateTime = g.cfg.Time(e)
	var seller int64
	if r.intn(hotSellersRatio) > 0 {
		seller = lastPerson(e) / hotGroup * hotGroup
	} else {
		seller = r.person(e)
	}
	a.Seller = seller + FirstPersonID
	a.Category = FirstCategoryID + r.intn(Categories)
	a.InitialBid = r.price()
	a.Reserve = a.InitialBid + r.price()
	// Auctions last about as long as it takes to start the next
	// numInFlightAuctions auctions (uniform in (0, twice that]).
	horizon := g.cfg.Time(e+numInFlightAuctions*EpochEvents/AuctionsPerEpoch) - a.DateTime
	a.Expires = a.DateTime + 1 + r.intn(max(horizon*2, 1))
	a.ItemName = r.text(t.text, 20)
	a.Description = r.text(t.text, 100)
	size := 8 + len(a.ItemName) + len(a.Description) + 8 + 8 + 8 + 8 + 8
	a.Extra = r.extra(t.text, size, avgAuctionBytes)
}

// Bid generates event e as a bid.
func (g *Generator) Bid(e int64, b *Bid) {
	t := loadTables()
	r := g.rng(e)
	var auction int64
	if r.intn(hotAuctionRatio) > 0 {
		auction = lastAuction(e) / hotGroup * hotGroup
	} else {
		auction = r.auction(e)
	}
	b.Auction = auction + FirstAuctionID
	var bidder int64
	if r.intn(hotBiddersRatio) > 0 {
		// The second person of the group, so that hot bidders and hot
		// sellers differ; never a person not yet in the stream.
		bidder = min(lastPerson(e)/hotGroup*hotGroup+1, lastPerson(e))
	} else {
		bidder = r.person(e)
	}
	b.Bidder = bidder + FirstPersonID
	b.Price = r.price()
	if r.intn(hotChannelsRatio) > 0 {
		i := r.intn(int64(len(t.hotChannels)))
		b.Channel, b.URL = t.hotChannels[i], t.hotURLs[i]
	} else {
		i := r.intn(channelsNumber)
		b.Channel, b.URL = t.channels[i], t.urls[i]
	}
	b.DateTime = g.cfg.Time(e)
	b.Extra = r.extra(t.text, 8+8+8+8, avgBidBytes)
}

// rng is a splitmix64 stream.
type rng struct{ s uint64 }

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// intn is uniform in [0, n), n > 0.
func (r *rng) intn(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

// price is the standard's round(10^(6u) * 100): 100 to 100 000 000 cents,
// log-uniform. u has 30 random bits; 10^(6u) is the product of three
// table entries, one per 10 bits, instead of a call to math.Exp.
func (r *rng) price() int64 {
	v := r.next() >> 34
	t := loadPowers()
	return int64(math.Floor(t[0][v>>20]*t[1][v>>10&1023]*t[2][v&1023]*100 + 0.5))
}

// loadPowers holds 10^(6k/2^10), 10^(6k/2^20) and 10^(6k/2^30), k < 2^10.
var loadPowers = sync.OnceValue(func() *[3][1024]float64 {
	var t [3][1024]float64
	for i, scale := range []float64{1 << 10, 1 << 20, 1 << 30} {
		for k := range t[i] {
			t[i][k] = math.Pow(10, 6*float64(k)/scale)
		}
	}
	return &t
})

// person picks one of the numActivePeople newest persons (base 0).
func (r *rng) person(e int64) int64 {
	n := lastPerson(e) + 1
	active := min(n, numActivePeople)
	return n - active + r.intn(active)
}

// auction picks one of the numInFlightAuctions newest auctions (base 0).
func (r *rng) auction(e int64) int64 {
	hi := lastAuction(e)
	lo := max(hi-numInFlightAuctions, 0)
	return lo + r.intn(hi-lo+1)
}

func (r *rng) letters(dst []byte) {
	v := r.next()
	for i := range dst {
		if i%12 == 11 {
			v = r.next()
		}
		dst[i] = byte('a' + (v % 26))
		v /= 26
	}
}

// text is the standard's nextString(max): 3 to max-1 characters, letters
// and about one space in 13.
func (r *rng) text(pool []byte, maxLen int64) []byte {
	n := 3 + r.intn(maxLen-3)
	off := r.intn(int64(len(pool)) - n)
	return pool[off : off+n]
}

// extra pads a record of size bytes to avg bytes on average (±20 %).
func (r *rng) extra(pool []byte, size, avg int) []byte {
	if size > avg {
		return pool[:0]
	}
	avg -= size
	delta := int64(math.Round(float64(avg) * 0.2))
	n := int64(avg) - delta
	if delta > 0 {
		n += r.intn(2 * delta)
	}
	off := r.intn(int64(len(pool)) - n)
	return pool[off : off+n]
}

// tables are the fixed strings the generator picks from.
type tables struct {
	text                 []byte
	names, cities        [][]byte
	states               [][]byte
	hotChannels, hotURLs [][]byte
	channels, urls       [][]byte
}

var loadTables = sync.OnceValue(func() *tables {
	t := &tables{}
	r := rng{s: 0x636c696e6b}
	// Random text in the standard's alphabet: letters, a space in 13.
	t.text = make([]byte, 1<<18)
	for i := range t.text {
		if r.intn(13) == 0 {
			t.text[i] = ' '
		} else {
			t.text[i] = byte('a' + r.intn(26))
		}
	}
	for _, f := range []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"} {
		for _, l := range []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"} {
			t.names = append(t.names, []byte(f+" "+l))
		}
	}
	for _, c := range []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"} {
		t.cities = append(t.cities, []byte(c))
	}
	for _, s := range []string{"AZ", "CA", "ID", "OR", "WA", "WY"} {
		t.states = append(t.states, []byte(s))
	}
	baseURL := func() string {
		part := func() string {
			b := make([]byte, 3+r.intn(2))
			for i := range b {
				if r.intn(13) == 0 {
					b[i] = '_'
				} else {
					b[i] = byte('a' + r.intn(26))
				}
			}
			return string(b)
		}
		return "https://www.nexmark.com/" + part() + "/" + part() + "/" + part() + "/item.htm?query=1"
	}
	for _, c := range []string{"Google", "Facebook", "Baidu", "Apple"} {
		t.hotChannels = append(t.hotChannels, []byte(c))
		t.hotURLs = append(t.hotURLs, []byte(baseURL()))
	}
	t.channels = make([][]byte, channelsNumber)
	t.urls = make([][]byte, channelsNumber)
	for i := range t.channels {
		t.channels[i] = []byte("channel-" + strconv.Itoa(i))
		rev := int64(bits.Reverse32(uint32(i)))
		if rev > math.MaxInt32 {
			rev = -(rev - 1<<32) // Java's Math.abs(Integer.reverse(i))
		}
		t.urls[i] = []byte(baseURL() + "&channel_id=" + strconv.FormatInt(rev, 10))
	}
	return t
})
