package nexmark

import "strconv"

// The JSON form of the events, one object per record, as `clink bench
// produce` writes them to Kafka: Flink's Nexmark field names, event times
// as epoch milliseconds. Generated strings never need escaping (letters,
// digits, spaces and URL characters), which appendString relies on.

// AppendPerson appends p as a JSON object.
func AppendPerson(dst []byte, p *Person) []byte {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, p.ID, 10)
	dst = appendString(append(dst, `,"name":`...), p.Name)
	dst = appendString(append(dst, `,"emailAddress":`...), p.Email)
	dst = appendString(append(dst, `,"creditCard":`...), p.CreditCard)
	dst = appendString(append(dst, `,"city":`...), p.City)
	dst = appendString(append(dst, `,"state":`...), p.State)
	dst = strconv.AppendInt(append(dst, `,"dateTime":`...), p.DateTime, 10)
	dst = appendString(append(dst, `,"extra":`...), p.Extra)
	return append(dst, '}')
}

// AppendAuction appends a as a JSON object.
func AppendAuction(dst []byte, a *Auction) []byte {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, a.ID, 10)
	dst = appendString(append(dst, `,"itemName":`...), a.ItemName)
	dst = appendString(append(dst, `,"description":`...), a.Description)
	dst = strconv.AppendInt(append(dst, `,"initialBid":`...), a.InitialBid, 10)
	dst = strconv.AppendInt(append(dst, `,"reserve":`...), a.Reserve, 10)
	dst = strconv.AppendInt(append(dst, `,"dateTime":`...), a.DateTime, 10)
	dst = strconv.AppendInt(append(dst, `,"expires":`...), a.Expires, 10)
	dst = strconv.AppendInt(append(dst, `,"seller":`...), a.Seller, 10)
	dst = strconv.AppendInt(append(dst, `,"category":`...), a.Category, 10)
	dst = appendString(append(dst, `,"extra":`...), a.Extra)
	return append(dst, '}')
}

// AppendBid appends b as a JSON object.
func AppendBid(dst []byte, b *Bid) []byte {
	dst = append(dst, `{"auction":`...)
	dst = strconv.AppendInt(dst, b.Auction, 10)
	dst = strconv.AppendInt(append(dst, `,"bidder":`...), b.Bidder, 10)
	dst = strconv.AppendInt(append(dst, `,"price":`...), b.Price, 10)
	dst = appendString(append(dst, `,"channel":`...), b.Channel)
	dst = appendString(append(dst, `,"url":`...), b.URL)
	dst = strconv.AppendInt(append(dst, `,"dateTime":`...), b.DateTime, 10)
	dst = appendString(append(dst, `,"extra":`...), b.Extra)
	return append(dst, '}')
}

// AppendEvent appends event e of its kind as JSON and returns its kind.
func (g *Generator) AppendEvent(dst []byte, e int64) ([]byte, Kind) {
	switch k := KindOf(e); k {
	case KindPerson:
		var p Person
		g.Person(e, &p)
		return AppendPerson(dst, &p), k
	case KindAuction:
		var a Auction
		g.Auction(e, &a)
		return AppendAuction(dst, &a), k
	default:
		var b Bid
		g.Bid(e, &b)
		return AppendBid(dst, &b), k
	}
}

func appendString(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
