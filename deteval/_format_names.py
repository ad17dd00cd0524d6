"""The names of the file formats and box formats, in a module that imports nothing: the
command line's parser offers them as choices without importing the readers (numpy, the
XML parser, ...). :mod:`deteval.io.formats` and :mod:`deteval.boxes` export them."""

GT_FORMATS = ("coco", "voc", "yolo", "csv", "openimages", "labelme", "cvat", "dota")
DETECTION_FORMATS = ("coco", "yolo", "csv", "openimages", "txt", "dota")
WRITE_FORMATS = ("coco", "voc", "yolo", "csv")
BOX_FORMATS = ("xyxy", "xywh", "cxcywh", "xyxyn", "xywhn", "cxcywhn")
