package nexmark

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	gen "github.com/clink-dev/clink/connectors/nexmark"
)

// FeedGenerator generates the first n events of the stream cfg and hands
// the events of the query's tables to h, then finishes it. It returns the
// number of events handed over.
func FeedGenerator(h Handler, q *Query, cfg gen.Config, n int64) int64 {
	g := gen.NewGenerator(cfg)
	var reads [3]bool
	for _, k := range q.Tables {
		reads[k] = true
	}
	var p gen.Person
	var a gen.Auction
	var b gen.Bid
	var count int64
	for e := int64(0); e < n; e++ {
		switch k := gen.KindOf(e); {
		case !reads[k]:
		case k == gen.KindBid:
			g.Bid(e, &b)
			h.Bid(&b)
			count++
		case k == gen.KindAuction:
			g.Auction(e, &a)
			h.Auction(&a)
			count++
		default:
			g.Person(e, &p)
			h.Person(&p)
			count++
		}
	}
	h.Finish()
	return count
}

// FeedKafka reads the query's topics from their start to the end offsets
// listed when it begins, parses each JSON record by hand (the fields in
// the order `clink bench produce` writes them) and hands it to h, then
// finishes it. Records of one partition come in order; topics interleave
// as fetched. It returns the number of records.
func FeedKafka(ctx context.Context, h Handler, q *Query, brokers string, topics map[gen.Kind]string) (int64, error) {
	seeds := strings.Split(brokers, ",")
	kindOf := map[string]gen.Kind{}
	var names []string
	for _, k := range q.Tables {
		t := topics[k]
		if t == "" {
			t = k.String()
		}
		kindOf[t] = k
		names = append(names, t)
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return 0, err
	}
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, names...)
	admin.Close()
	if err != nil {
		return 0, err
	}
	consume := map[string]map[int32]kgo.Offset{}
	end := map[string]map[int32]int64{}
	remain := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			err = fmt.Errorf("topic %s partition %d: %w", o.Topic, o.Partition, o.Err)
			return
		}
		if o.Offset <= 0 {
			return
		}
		if consume[o.Topic] == nil {
			consume[o.Topic], end[o.Topic] = map[int32]kgo.Offset{}, map[int32]int64{}
		}
		consume[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
		end[o.Topic][o.Partition] = o.Offset
		remain++
	})
	if err != nil || remain == 0 {
		h.Finish()
		return 0, err
	}
	// The engine's Kafka source fetches the same way and recycles records
	// likewise (the handlers copy what they keep).
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(consume), kgo.WithPools(&recordPool{}),
		kgo.FetchMaxBytes(512<<10), kgo.FetchMaxPartitionBytes(128<<10), kgo.MaxConcurrentFetches(2))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var p gen.Person
	var a gen.Auction
	var b gen.Bid
	var count int64
	for remain > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return count, err
		}
		for _, f := range fetches {
			for _, t := range f.Topics {
				k := kindOf[t.Topic]
				for _, part := range t.Partitions {
					if part.Err != nil {
						return count, fmt.Errorf("topic %s partition %d: %w", t.Topic, part.Partition, part.Err)
					}
					last := end[t.Topic][part.Partition]
					for _, r := range part.Records {
						if r.Offset >= last {
							break
						}
						if r.Offset+1 == last {
							remain--
						}
						var ok bool
						switch k {
						case gen.KindBid:
							if ok = parseBid(r.Value, &b); ok {
								h.Bid(&b)
							}
						case gen.KindAuction:
							if ok = parseAuction(r.Value, &a); ok {
								h.Auction(&a)
							}
						default:
							if ok = parsePerson(r.Value, &p); ok {
								h.Person(&p)
							}
						}
						if !ok {
							return count, fmt.Errorf("topic %s partition %d offset %d: not a %s record: %.200s", t.Topic, part.Partition, r.Offset, k, r.Value)
						}
						count++
						r.Recycle()
					}
				}
			}
		}
	}
	h.Finish()
	return count, nil
}

// scanner reads one record of known shape; ok turns false at the first
// surprise (the caller then falls back to encoding/json).
type scanner struct {
	b  []byte
	i  int
	ok bool
}

func (s *scanner) lit(l string) {
	if s.ok && len(s.b)-s.i >= len(l) && string(s.b[s.i:s.i+len(l)]) == l {
		s.i += len(l)
		return
	}
	s.ok = false
}

func (s *scanner) int() int64 {
	if !s.ok {
		return 0
	}
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var v int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		v = v*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || s.i-start > 18 {
		s.ok = false
	}
	if neg {
		v = -v
	}
	return v
}

// str reads a string's body after its opening quote (already matched by
// the preceding literal) and the closing quote.
func (s *scanner) str() []byte {
	if !s.ok {
		return nil
	}
	j := bytes.IndexByte(s.b[s.i:], '"')
	if j < 0 || bytes.IndexByte(s.b[s.i:s.i+j], '\\') >= 0 {
		s.ok = false
		return nil
	}
	v := s.b[s.i : s.i+j]
	s.i += j + 1
	return v
}

func parseBid(v []byte, b *gen.Bid) bool {
	s := scanner{b: v, ok: true}
	s.lit(`{"auction":`)
	b.Auction = s.int()
	s.lit(`,"bidder":`)
	b.Bidder = s.int()
	s.lit(`,"price":`)
	b.Price = s.int()
	s.lit(`,"channel":"`)
	b.Channel = s.str()
	s.lit(`,"url":"`)
	b.URL = s.str()
	s.lit(`,"dateTime":`)
	b.DateTime = s.int()
	s.lit(`,"extra":"`)
	b.Extra = s.str()
	s.lit(`}`)
	if s.ok {
		return true
	}
	var j struct {
		Auction, Bidder, Price int64
		Channel, URL           string
		DateTime               int64
		Extra                  string
	}
	if json.Unmarshal(v, &j) != nil {
		return false
	}
	*b = gen.Bid{Auction: j.Auction, Bidder: j.Bidder, Price: j.Price, Channel: []byte(j.Channel), URL: []byte(j.URL), DateTime: j.DateTime, Extra: []byte(j.Extra)}
	return true
}

func parseAuction(v []byte, a *gen.Auction) bool {
	s := scanner{b: v, ok: true}
	s.lit(`{"id":`)
	a.ID = s.int()
	s.lit(`,"itemName":"`)
	a.ItemName = s.str()
	s.lit(`,"description":"`)
	a.Description = s.str()
	s.lit(`,"initialBid":`)
	a.InitialBid = s.int()
	s.lit(`,"reserve":`)
	a.Reserve = s.int()
	s.lit(`,"dateTime":`)
	a.DateTime = s.int()
	s.lit(`,"expires":`)
	a.Expires = s.int()
	s.lit(`,"seller":`)
	a.Seller = s.int()
	s.lit(`,"category":`)
	a.Category = s.int()
	s.lit(`,"extra":"`)
	a.Extra = s.str()
	s.lit(`}`)
	if s.ok {
		return true
	}
	var j struct {
		ID                    int64
		ItemName, Description string
		InitialBid, Reserve   int64
		DateTime, Expires     int64
		Seller, Category      int64
		Extra                 string
	}
	if json.Unmarshal(v, &j) != nil {
		return false
	}
	*a = gen.Auction{ID: j.ID, ItemName: []byte(j.ItemName), Description: []byte(j.Description), InitialBid: j.InitialBid, Reserve: j.Reserve,
		DateTime: j.DateTime, Expires: j.Expires, Seller: j.Seller, Category: j.Category, Extra: []byte(j.Extra)}
	return true
}

func parsePerson(v []byte, p *gen.Person) bool {
	s := scanner{b: v, ok: true}
	s.lit(`{"id":`)
	p.ID = s.int()
	s.lit(`,"name":"`)
	p.Name = s.str()
	s.lit(`,"emailAddress":"`)
	p.Email = s.str()
	s.lit(`,"creditCard":"`)
	p.CreditCard = s.str()
	s.lit(`,"city":"`)
	p.City = s.str()
	s.lit(`,"state":"`)
	p.State = s.str()
	s.lit(`,"dateTime":`)
	p.DateTime = s.int()
	s.lit(`,"extra":"`)
	p.Extra = s.str()
	s.lit(`}`)
	if s.ok {
		return true
	}
	var j struct {
		ID                                                 int64
		Name, EmailAddress, CreditCard, City, State, Extra string
		DateTime                                           int64
	}
	if json.Unmarshal(v, &j) != nil {
		return false
	}
	*p = gen.Person{ID: j.ID, Name: []byte(j.Name), Email: []byte(j.EmailAddress), CreditCard: []byte(j.CreditCard), City: []byte(j.City),
		State: []byte(j.State), DateTime: j.DateTime, Extra: []byte(j.Extra)}
	return true
}

// recordPool recycles franz-go's record slices and decompression buffers,
// as the engine's Kafka source does.
type recordPool struct {
	recs sync.Pool // *[]kgo.Record
	bufs sync.Pool // *[]byte
}

var (
	_ kgo.PoolRecords         = (*recordPool)(nil)
	_ kgo.PoolDecompressBytes = (*recordPool)(nil)
)

func (p *recordPool) GetRecords(n int) []kgo.Record {
	if v, ok := p.recs.Get().(*[]kgo.Record); ok && cap(*v) >= n {
		return (*v)[:0]
	}
	return make([]kgo.Record, 0, n)
}

func (p *recordPool) PutRecords(r []kgo.Record) { p.recs.Put(&r) }

func (p *recordPool) GetDecompressBytes(compressed []byte, _ kgo.CompressionCodecType) []byte {
	if v, ok := p.bufs.Get().(*[]byte); ok && cap(*v) >= 2*len(compressed) {
		return (*v)[:0]
	}
	return make([]byte, 0, 4*len(compressed))
}

func (p *recordPool) PutDecompressBytes(b []byte) { p.bufs.Put(&b) }
