-- Nexmark q0, pass-through: every bid, unchanged. Measures reading
-- (generating or consuming and decoding) and the pipeline. As Flink's.
CREATE TABLE nexmark_q0 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime BIGINT, extra VARCHAR)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q0
SELECT auction, bidder, price, dateTime, extra FROM bid;
