// "Hide library frames" (memray's "hide irrelevant frames"): the flame graphs keep the frames of
// the user's own code and each site's headline, so a stack reads train.py:80 -> train.py:52 instead
// of forty frames of torch, c10 and CUDA. Whose code a frame is was decided by gpuleak's one
// classifier (output/user_code.h): from a capture the view marks every frame (frames.user); a
// report says it only through its headlines, so there the frames a headline names are the user's.
import { h } from './dom.js';

// keep(frame, site) for buildStackTree, or null to keep every frame.
export function userFrameFilter(model, hide) {
  if (!hide) return null;
  const user = model.frames.user ?? [];
  const headline = model.sites.headline ?? [];
  return (frame, site) => user[frame] === 1 || headline[site] === frame;
}

// The checkbox, checked or not as `initial`; onChange(checked).
export function hideLibraryControl(id, initial, onChange) {
  const box = h('input', { type: 'checkbox', id, checked: initial });
  box.addEventListener('change', () => onChange(box.checked));
  return { box, el: h('label', { class: 'control', title: 'Keep only the frames of your own code (and each site\'s headline)' },
    box, ' Hide library frames') };
}
