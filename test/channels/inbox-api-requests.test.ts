import { describe, expect, it } from 'vitest';
import { decodePageToken, encodePageToken } from '../../src/channels/inbox/api/page-token.ts';
import { filterOf, idsOf, InvalidRequest, ownerOf, pageSizeOf } from '../../src/channels/inbox/api/requests.ts';

const owner = { appCode: 'lalu', userId: '10001' };
const filter = { read: 'all' as const, archived: 'exclude' as const, kinds: [] };

describe('inbox API page tokens', () => {
  it('round-trips for the same caller and filters; refuses other filters, another caller, a forged id and a wrong secret', () => {
    const token = encodePageToken('s3cret', owner, filter, '12345');
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodePageToken('s3cret', owner, filter, token)).toEqual({ ok: true, lastId: '12345' });
    expect(decodePageToken('s3cret', owner, { ...filter, read: 'unread' }, token)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/other filters or another caller/),
    });
    expect(decodePageToken('s3cret', { ...owner, userId: '10002' }, filter, token)).toMatchObject({ ok: false });
    const forged = Buffer.from(Buffer.from(token, 'base64url').toString().replace('12345', '99999')).toString('base64url');
    expect(decodePageToken('s3cret', owner, filter, forged)).toMatchObject({ ok: false, reason: expect.stringMatching(/not a token this service issued/) });
    expect(decodePageToken('other', owner, filter, token)).toMatchObject({ ok: false });
    expect(decodePageToken('s3cret', owner, filter, 'not a token!')).toMatchObject({ ok: false });
  });
});

describe('inbox API request checks', () => {
  it('names what is wrong', () => {
    expect(() => ownerOf(undefined)).toThrow(/caller is required/);
    expect(() => ownerOf({ app_code: '', user_id: '1' })).toThrow(/app_code/);
    expect(() => ownerOf({ app_code: 'lalu', user_id: '' })).toThrow(/user_id is missing/);
    expect(() => pageSizeOf(-1)).toThrow(InvalidRequest);
    expect(pageSizeOf(0)).toBe(20);
    expect(pageSizeOf(100000)).toBe(100);
    expect(() => idsOf([])).toThrow(/at least one/);
    expect(() => idsOf(Array.from({ length: 101 }, (_, i) => String(i + 1)))).toThrow(/at most 100/);
    expect(() => idsOf(['12', 'x'])).toThrow(/decimal item id/);
    expect(idsOf(['7', '7', '8'])).toEqual(['7', '8']);
    expect(filterOf({ read: 'READ_FILTER_UNREAD', archived: 'ARCHIVE_FILTER_INCLUDE', kinds: ['room_notice'] })).toEqual({
      read: 'unread',
      archived: 'include',
      kinds: ['room_notice'],
    });
    expect(() => filterOf({ kinds: ['Bad Kind'] })).toThrow(/notice kind/);
  });
});
