/* SPDX-License-Identifier: MIT */
#include "test_util.h"
#include "time_arg.h"

static uint64_t parse(const char *s)
{
    uint64_t v = 12345;
    CHECK(cmt_parse_time_arg(s, &v) == 0);
    return v;
}

int main(void)
{
    CHECK_EQ_U64(parse("2"), 2000000000ull);
    CHECK_EQ_U64(parse("1.5s"), 1500000000ull);
    CHECK_EQ_U64(parse("0.25"), 250000000ull);
    CHECK_EQ_U64(parse("250ms"), 250000000ull);
    CHECK_EQ_U64(parse("1.5ms"), 1500000ull);
    CHECK_EQ_U64(parse("80us"), 80000ull);
    CHECK_EQ_U64(parse("1500000000ns"), 1500000000ull);
    CHECK_EQ_U64(parse("1.0000000019"), 1000000001ull); /* below a ns: dropped */
    CHECK_EQ_U64(parse("18446744073ns"), 18446744073ull);
    const char *bad[] = {"", "s", "-1", "1.", ".5", "1 s", "1sec", "1m", "1e9", "1.5.2", "99999999999999999999",
                         "18446744074s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v;
        if (cmt_parse_time_arg(bad[i], &v) == 0) {
            fprintf(stderr, "accepted '%s'\n", bad[i]);
            return 1;
        }
    }
    return 0;
}
