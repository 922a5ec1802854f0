import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyAddress, isPublicAddress } from '../../lib/egress.ts';

const refused: Array<[string, RegExp]> = [
  ['127.0.0.1', /loopback/],
  ['127.255.255.254', /loopback/],
  ['10.0.0.1', /private/],
  ['10.255.255.255', /private/],
  ['172.16.0.1', /private/],
  ['172.31.255.255', /private/],
  ['192.168.1.1', /private/],
  ['169.254.169.254', /link-local/],
  ['169.254.0.1', /link-local/],
  ['100.64.0.1', /CGNAT/],
  ['100.127.255.255', /CGNAT/],
  ['0.0.0.0', /unspecified/],
  ['0.1.2.3', /unspecified/],
  ['224.0.0.1', /multicast/],
  ['239.255.255.250', /multicast/],
  ['240.0.0.1', /reserved/],
  ['255.255.255.255', /reserved/],
  ['192.0.0.8', /IETF/],
  ['192.0.2.10', /documentation/],
  ['198.18.0.1', /benchmarking/],
  ['198.51.100.7', /documentation/],
  ['203.0.113.9', /documentation/],
  ['::', /unspecified/],
  ['::1', /loopback/],
  ['0:0:0:0:0:0:0:1', /loopback/],
  ['fe80::1', /link-local/],
  ['febf:ffff::1', /link-local/],
  ['fc00::1', /unique local/],
  ['fd00:ec2::254', /unique local/],
  ['fec0::1', /site-local/],
  ['ff02::1', /multicast/],
  ['2001:db8::1', /documentation/],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
  ['100::1', /discard/],
  ['64:ff9b:1::10.0.0.1', /NAT64/],
  // IPv4 carried inside IPv6
  ['::ffff:127.0.0.1', /loopback/],
  ['::ffff:7f00:1', /loopback/],
  ['::ffff:169.254.169.254', /link-local/],
  ['::ffff:a9fe:a9fe', /link-local/],
  ['::ffff:10.1.2.3', /private/],
  ['::127.0.0.1', /loopback/],
  ['::192.168.0.1', /private/],
  ['64:ff9b::127.0.0.1', /loopback/],
  ['64:ff9b::a00:1', /private/],
  ['2002:7f00:1::', /loopback/],
  ['2002:c0a8:101::1', /private/],
  // special-purpose IPv6 blocks outside the IPv4 carriers
  ['::ffff:0:127.0.0.1', /IPv4-translated/],
  ['::ffff:0:8.8.8.8', /IPv4-translated/],
  ['::ffff:0:808:808', /IPv4-translated/],
  ['3fff::1', /documentation/],
  ['3fff:fff:ffff::1', /documentation/],
  ['5f00::1', /segment routing/],
  ['5f00:ffff::1', /segment routing/],
  ['100:0:0:1::7', /dummy/],
  ['2001:2::1', /benchmarking/],
  ['64:ff9b:1:ffff::1', /local-use NAT64/],
  // nothing outside global unicast 2000::/3 is a destination
  ['4000::1', /unallocated/],
  ['1::1', /unallocated/],
  ['e000::1', /unallocated/],
];

const allowed = [
  '8.8.8.8', '1.1.1.1', '140.82.112.3', '172.15.255.255', '172.32.0.0', '100.63.255.255', '100.128.0.0',
  '169.253.255.255', '11.0.0.1', '223.255.255.255', '192.169.0.1',
  '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1',
  '3fff:1000::1', '2001:200::1', '2620:4f:8000::1', '192.31.196.1', '192.52.193.1', '192.175.48.1',
];

test('loopback, private, link-local, CGNAT, multicast, reserved and metadata addresses are refused', () => {
  for (const [address, reason] of refused) {
    const verdict = classifyAddress(address);
    assert.ok(verdict, `${address} should be refused`);
    assert.match(verdict, reason, `${address}: ${verdict}`);
    assert.equal(isPublicAddress(address), false);
  }
});

test('public IPv4 and IPv6 addresses, including IPv4 carried in IPv6, are allowed', () => {
  for (const address of allowed) assert.equal(classifyAddress(address), null, address);
});

test('a text that is no IP address is never public', () => {
  for (const text of ['localhost', '', '1.2.3', '::g', 'example.com']) assert.equal(isPublicAddress(text), false, text);
});
