// Members `/members` (owners): invite by e-mail, the list, remove.
import { when } from './format.ts';
import { html, type Html } from './html.ts';
import { confirmDialog, notice, page, type Viewer } from './layout.ts';
import type { MemberListing, SignedIn } from './model.ts';

export interface MembersView {
  members: MemberListing[];
  error?: string | Html;
  done?: string | Html;
  form?: { email: string; role: 'owner' | 'member' };
}

export function membersPage(viewer: Viewer, me: SignedIn, view: MembersView): string {
  const form = view.form ?? { email: '', role: 'member' as const };
  return page(
    viewer,
    'members',
    'Members',
    html`${view.error ? notice('error', view.error) : ''}${view.done ? notice('ok', view.done) : ''}
<section class="card" aria-labelledby="invite-title">
<h2 id="invite-title">Invite someone</h2>
<form method="post" action="/members" class="stack">
  ${viewer.csrf}
  <label for="invite-email">Email</label>
  <input id="invite-email" name="email" type="email" required value="${form.email}">
  <label for="invite-role">Role</label>
  <select id="invite-role" name="role">
    <option value="member"${form.role === 'member' ? html` selected` : ''}>Member: uses keys, videos and billing</option>
    <option value="owner"${form.role === 'owner' ? html` selected` : ''}>Owner: also manages members</option>
  </select>
  <button type="submit">Send invitation</button>
</form>
<p class="hint">The invitation link is e-mailed and works once, for 7 days.</p>
</section>
<section aria-labelledby="members-title">
<h2 id="members-title">People</h2>
<div class="scroll" tabindex="0" role="region" aria-label="Members">
<table class="members">
<thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Invited</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${view.members.map(
      (m, i) => html`<tr><td>${m.email}${m.memberId === me.memberId ? ' (you)' : ''}</td><td>${m.role}</td><td>${m.status}</td><td>${when(m.invitedAt)}<br><span class="muted">by ${m.invitedBy}</span></td>
<td>${m.memberId === me.memberId ? '' : html`<button type="button" class="danger" data-confirm="remove-${i}">Remove</button>${confirmDialog(viewer, { id: `remove-${i}`, action: `/members/${encodeURIComponent(m.memberId)}/remove`, title: `Remove ${m.email}?`, text: 'Their sessions end at once and their invitation, if unused, stops working.', confirm: 'Remove member' })}`}</td></tr>`,
    )}</tbody>
</table>
</div>
</section>`,
  );
}
