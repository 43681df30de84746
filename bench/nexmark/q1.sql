-- Nexmark q1, currency conversion: every bid's price in euros. As
-- Flink's (0.908 * price is an exact DECIMAL(23, 3)).
CREATE TABLE nexmark_q1 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), dateTime BIGINT, extra VARCHAR)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q1
SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid;
