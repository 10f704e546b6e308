"""loadlib.netcheck: only this machine's loopback is accepted, for load and for a
database that a run drops and reseeds.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_netcheck
"""
import unittest


from loadlib import netcheck


class Loopback(unittest.TestCase):
    def test_loopback_addresses_and_names(self):
        for host in ("127.0.0.1", "127.8.9.10", "127.255.255.254", "::1", "[::1]", "localhost", "LocalHost",
                     "ip6-localhost", "localhost.localdomain"):
            self.assertTrue(netcheck.is_loopback(host), host)

    def test_everything_else_is_refused(self):
        for host in ("", None, "0.0.0.0", "10.0.0.1", "192.168.1.10", "128.0.0.1", "8.8.8.8", "::", "fe80::1",
                     "2001:db8::1", "example.com", "localhost.example.com", "127.0.0.1.example.com",
                     "127.0.0.256", "127.1", "notlocalhost"):
            self.assertFalse(netcheck.is_loopback(host), host)

    def test_urls(self):
        self.assertEqual(netcheck.require_loopback_url("http://127.0.0.1:8080/json"), "127.0.0.1")
        self.assertEqual(netcheck.require_loopback_url("https://[::1]:8443/"), "::1")
        for url in ("http://10.1.2.3:8080/", "http://example.com/", "ftp://127.0.0.1/", "127.0.0.1:8080",
                    "http://user@192.0.2.1:80/"):
            with self.assertRaises(netcheck.NotLoopback, msg=url):
                netcheck.require_loopback_url(url)


class Databases(unittest.TestCase):
    def test_hosts_of_uris_and_key_value_strings(self):
        self.assertEqual(netcheck.db_hosts("postgresql://u@127.0.0.1:5432/notes"), ["127.0.0.1"])
        self.assertEqual(netcheck.db_hosts("postgres://u:p@[::1]:5/db"), ["::1"])
        self.assertEqual(netcheck.db_hosts("postgresql://a:1,b.example:2/db"), ["a", "b.example"])
        self.assertEqual(netcheck.db_hosts("postgresql:///notes?host=/run/postgresql"), ["/run/postgresql"])
        self.assertEqual(netcheck.db_hosts("postgresql://x/db?hostaddr=10.0.0.5"), ["x", "10.0.0.5"])
        self.assertEqual(netcheck.db_hosts("host=db.example port=5433 dbname=notes"), ["db.example"])
        self.assertEqual(netcheck.db_hosts("dbname=notes"), [])

    def test_ports(self):
        self.assertEqual(netcheck.db_port("postgresql://u@127.0.0.1:54329/notes"), 54329)
        self.assertEqual(netcheck.db_port("postgresql://u@127.0.0.1/notes"), 5432)
        self.assertEqual(netcheck.db_port("postgresql://u@h/notes?port=6000"), 6000)
        self.assertEqual(netcheck.db_port("host=x port='5499'"), 5499)

    def test_a_unix_socket_is_this_machine(self):
        self.assertTrue(netcheck.is_loopback_host(None))
        self.assertTrue(netcheck.is_loopback_host(""))
        self.assertTrue(netcheck.is_loopback_host("/var/run/postgresql"))

    def test_remote_hosts_are_named(self):
        self.assertEqual(netcheck.remote_db_hosts("postgresql://u@127.0.0.1:5432,db.example:5432/n"),
                         ["db.example"])
        self.assertEqual(netcheck.remote_db_hosts("host=10.0.0.7 dbname=n"), ["10.0.0.7"])
        self.assertEqual(netcheck.remote_db_hosts("postgresql://u@localhost/n"), [])


class OwnNamespaces(unittest.TestCase):
    """loadtests/bench --netns: 198.18.0.0/15 addresses held by nb-load, nb-srv or nb-db
    count as this machine, only while those namespaces hold them and only from inside."""

    HELD = {"198.18.1.1", "198.18.1.2", "198.18.2.1", "198.18.2.2", "10.0.0.1"}

    def test_accepted_from_inside_while_held(self):
        for host in ("198.18.1.2", "198.18.2.2"):
            self.assertTrue(netcheck.is_own_netns_address(host, "nb-load", self.HELD), host)
            self.assertTrue(netcheck.is_local(host, "nb-srv", self.HELD), host)
        self.assertEqual(netcheck.require_loopback_url("http://198.18.1.2:18400/", "load",
                                                       "nb-load", self.HELD), "198.18.1.2")
        self.assertEqual(netcheck.remote_db_hosts("postgresql://postgres@198.18.2.2:5432/notes",
                                                  "nb-srv", self.HELD), [])

    def test_refused_otherwise(self):
        cases = [("198.18.1.2", None, self.HELD),        # from the host: the default route
                 ("198.18.1.2", "other-ns", self.HELD),  # not one of ours
                 ("198.18.1.3", "nb-load", self.HELD),   # in the range, held by nobody
                 ("198.19.255.1", "nb-load", self.HELD),
                 ("10.0.0.1", "nb-load", self.HELD),     # held, but outside 198.18.0.0/15
                 ("198.18.1.2", "nb-load", set()),       # the namespaces are gone
                 ("198.20.0.1", "nb-load", {"198.20.0.1"}),
                 ("nb-srv", "nb-load", self.HELD), ("", "nb-load", self.HELD)]
        for host, ns, held in cases:
            self.assertFalse(netcheck.is_own_netns_address(host, ns, held), (host, ns))
        with self.assertRaises(netcheck.NotLoopback):
            netcheck.require_loopback_url("http://198.18.1.2:18400/", "load", None, self.HELD)
        self.assertEqual(netcheck.remote_db_hosts("host=198.18.2.2 dbname=n", None, self.HELD),
                         ["198.18.2.2"])

    def test_without_namespaces_nothing_is_held(self):
        # read live: with no nb-* namespace on this machine the set is empty
        import os
        if not any(os.path.exists(f"/run/netns/{n}") for n in netcheck.NETNS_NAMES):
            self.assertEqual(netcheck.netns_addresses(), set())
            self.assertFalse(netcheck.is_own_netns_address("198.18.1.2", "nb-load"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
