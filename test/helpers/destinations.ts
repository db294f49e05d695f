// Webhook destinations the server must refuse, spelled every way a URL parser accepts them.

/** The spellings of refused hosts, as a user may type them into a URL, and the class each is refused as. */
export const REFUSED_SPELLINGS: [string, string][] = [
  ['127.0.0.1', 'loopback'], ['2130706433', 'loopback'], ['0x7f000001', 'loopback'], ['0X7F000001', 'loopback'], ['0177.0.0.1', 'loopback'],
  ['127.1', 'loopback'], ['127.0.1', 'loopback'], ['0x7f.1', 'loopback'], ['127.0.0.1.', 'loopback'], ['127.000.000.001', 'loopback'],
  ['017700000001', 'loopback'], ['%31%32%37.0.0.1', 'loopback'], ['\uff11\uff12\uff17.\uff10.\uff10.\uff11', 'loopback'],
  ['localhost', 'loopback'], ['LOCALHOST', 'loopback'], ['localhost.', 'loopback'], ['localhost..', 'loopback'], ['api.localhost', 'loopback'], ['A.B.LocalHost.', 'loopback'],
  ['[::1]', 'loopback'], ['[0:0:0:0:0:0:0:1]', 'loopback'], ['[::ffff:127.0.0.1]', 'loopback'], ['[::ffff:7f00:1]', 'loopback'],
  ['[::127.0.0.1]', 'loopback'], ['[::ffff:0:127.0.0.1]', 'loopback'], ['[64:ff9b::127.0.0.1]', 'loopback'], ['[2002:7f00:1::1]', 'loopback'],
  ['0', 'unspecified'], ['0.0.0.0', 'unspecified'], ['0x0', 'unspecified'], ['[::]', 'unspecified'],
  ['10.0.0.1', 'private'], ['0xa000001', 'private'], ['172.16.0.1', 'private'], ['172.31.255.254', 'private'], ['192.168.1.1', 'private'],
  ['3232235777', 'private'], ['[fc00::1]', 'private'], ['[fd12:3456::1]', 'private'], ['[::ffff:10.0.0.1]', 'private'],
  ['[64:ff9b::10.0.0.1]', 'private'], ['[2002:c0a8:101::1]', 'private'],
  ['169.254.169.254', 'link-local'], ['2852039166', 'link-local'], ['0xa9fea9fe', 'link-local'], ['0251.0376.0251.0376', 'link-local'],
  ['169.254.43518', 'link-local'], ['[fe80::1]', 'link-local'], ['[::ffff:a9fe:a9fe]', 'link-local'], ['[::ffff:169.254.169.254]', 'link-local'],
  ['224.0.0.1', 'multicast'], ['[ff02::1]', 'multicast'],
  ['100.64.0.1', 'shared'], ['255.255.255.255', 'broadcast'], ['4294967295', 'broadcast'], ['240.0.0.1', 'reserved'],
];
