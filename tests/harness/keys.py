"""Test-only secrets: the one home of the suite's Fernet key (settings and subprocesses)."""

# A fixed, valid Fernet key. Never a production secret.
TEST_FERNET_KEY = "ZmDfcTF7_60GrrY167zsiPd67pEvs0aGOv2oasOM1Pg="
