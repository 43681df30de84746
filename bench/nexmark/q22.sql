-- Nexmark q22, get URL directories: the first three directories of each
-- bid's URL.
-- Adapted: Flink's SPLIT_INDEX(url, '/', 3) (0-based) is Clink's
-- SPLIT_PART(url, '/', 4) (1-based, as PostgreSQL); every generated URL
-- has the parts, so SPLIT_INDEX's NULL for a missing part never differs
-- from SPLIT_PART's ''.
CREATE TABLE nexmark_q22 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR,
  dir1 VARCHAR, dir2 VARCHAR, dir3 VARCHAR)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q22
SELECT auction, bidder, price, channel,
  SPLIT_PART(url, '/', 4) AS dir1,
  SPLIT_PART(url, '/', 5) AS dir2,
  SPLIT_PART(url, '/', 6) AS dir3
FROM bid;
