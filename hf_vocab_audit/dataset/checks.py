"""Names shared by the kernel and the rules: column roles and check names (no heavy imports)."""

from ..facts.limits import IGNORE_INDEX  # noqa: F401 - the label value cross entropy skips (one definition)

# Column roles (see roles.py).
INPUT_IDS, TOKEN_TYPE_IDS, ATTENTION_MASK, POSITION_IDS = "input_ids", "token_type_ids", "attention_mask", "position_ids"
TEXT, CLASS_LABEL, LM_LABELS = "text", "class_label", "lm_labels"
CHAT = "chat"  # a sequence rendered from a chat/instruction format (chat_formats.py)
# Labels of heads whose loss is not cross entropy over num_labels classes (facts.limits.LabelKind).
LABEL_VECTOR = "label_vector"  # multi-label: one vector of num_labels numbers per row
CHOICE_LABEL = "choice_label"  # multiple choice: one index < the row's number of choices
CTC_LABELS = "ctc_labels"  # CTC targets: ids < the CTC head's rows; every negative is padding
LABEL_ROLES = (CLASS_LABEL, LABEL_VECTOR, CHOICE_LABEL)  # the columns a classification head takes as labels
ID_ROLES = (INPUT_IDS, TOKEN_TYPE_IDS, ATTENTION_MASK, POSITION_IDS)

# Check names (the keys of Summary.violations; rules in rules/dataset.py read them).
ID_TOO_LARGE = "id-too-large"  # token id >= input-embedding rows
NEGATIVE = "negative"  # negative value in a non-label id column
TYPE_TOO_LARGE = "type-too-large"  # token_type_id >= type_vocab_size
TOO_LONG = "too-long"  # sequence longer than the usable absolute positions
BEYOND_ROTARY = "beyond-rotary"  # sequence longer than max_position_embeddings of a rotary model
POSITION_TOO_LARGE = "position-too-large"  # position_ids value >= usable positions
LABEL_OUT_OF_RANGE = "label-out-of-range"  # class label outside 0..num_labels-1 (not -100, not -1)
LABEL_MINUS_ONE = "label-minus-one"  # class label -1 (a common "unknown" marker cross entropy rejects)
LM_LABEL_TOO_LARGE = "lm-label-too-large"  # LM label id >= lm_head rows, or negative other than -100
ALL_MASKED = "all-masked"  # a row whose labels are all -100
EOS_MASKED = "eos-masked"  # eos in input_ids whose label is -100 (or masked by the collator) when pad == eos
NULL = "null"  # a missing value in a checked column
LABEL_VECTOR_LENGTH = "label-vector-length"  # a multi-label row whose vector is not num_labels long
LABEL_VECTOR_INTEGER = "label-vector-integer"  # a multi-label row of integers (or booleans): BCE needs floats
LABEL_VECTOR_OUTSIDE = "label-vector-outside"  # a multi-label target outside 0..1: BCE runs, no probability
CHOICE_OUT_OF_RANGE = "choice-out-of-range"  # a multiple-choice label >= the row's choices (or negative, not -100)
CTC_LABEL_TOO_LARGE = "ctc-label-too-large"  # a CTC target >= the CTC head's rows (config vocab_size)
TEXT_TOO_LONG = "text-too-long"  # a text row over MAX_TEXT_CHARS characters: not tokenized, not checked
LENGTH_MISMATCH = "length-mismatch"  # per-token labels whose length differs from the row's input_ids
UNREADABLE_LINE = "unreadable-line"  # a JSON Lines line that is not a JSON row; locations: (line, None, message)
READ_STOPPED = "read-stopped"  # the reader gave up after too many such lines; location: (line, None, None)
WATCHED = "watched-id"  # an input id among ScanContext.watch (untrained rows the adapter leaves frozen: HVA580)

# Chat and instruction splits (chat.py; rules in rules/dataset_chat.py).
CHAT_REFUSED = "chat-refused"  # the template (or TRL's preparation) raises on the row; value = its message
CHAT_MASK_EMPTY = "chat-mask-empty"  # assistant-only loss and no token of the row in the assistant mask
CHAT_TRUNCATED = "chat-truncated"  # max_length truncation leaves no token with a loss: TRL drops the row
CHAT_NOT_PREFIX = "chat-not-prefix"  # the prompt's tokens are not a prefix of prompt+completion's
CHAT_EOS_NOT_LEARNED = "chat-eos-not-learned"  # the last span with a loss holds no eos / end-of-turn token
CHAT_NO_TEMPLATE = "chat-no-template"  # conversational rows and a tokenizer without a chat template
CHAT_OVER_BUDGET = "chat-over-budget"  # the row's render went past its budget (chat_budget.py); value = what
CHAT_MEDIA_MISMATCH = "chat-media-mismatch"  # a vision row's placeholders do not match its images/videos
CHAT_MEDIA_TRUNCATED = "chat-media-truncated"  # max_length cuts an expanded image placeholder; value = length needed
CHAT_NOT_RENDERED = "chat-not-rendered"  # the split's rendering budget was spent before the row: not checked
CHAT_CONTENT_DROPPED = "chat-content-dropped"  # a trained turn's field the template does not render (chat_content.py)
DOUBLE_BOS = "double-bos"  # a sequence's ids start with two BOS (template's and tokenizer's); value = the BOS id
CHAT_PROCESSOR_UNBUILT = "chat-processor-unbuilt"  # a processor class named, AutoProcessor cannot build it
